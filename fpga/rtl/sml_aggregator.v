// sml_aggregator: the switchml-rs aggregator data path (protocol.md §4) as a streaming
// pipeline, one module a stage:
//
//   s_axis → skid → sml_type_demux ─→ skid → host_axis   (Join, Abort, Status, Leave)
//                        │
//                        └→ sml_rx_parse → [meta fifo] → sml_decide → [op fifo] ─┐
//                               └→ [payload fifo] ───────────────────────────────┤
//                                                                  sml_aggregate ┘
//        m_axis ← skid ← sml_replicate ← sml_emit ← [desc fifo, result fifo] ←┘
//
// The host CPU (control plane) writes the job table through cfg_* (sml_config) and reads
// the drop counters. v_* reports one verdict a data-path packet, for counters and tests.
// L int32 lanes a beat (tdata is 32·L bits); K_MAX values a slot; SLOTS slots of two
// versions; JOBS jobs; RANKS ranks a job (at most 64: the ProbeReply bitmap fits a beat).
`default_nettype none
module sml_aggregator #(
    parameter integer L     = 8,
    parameter integer K_MAX = 256,
    parameter integer SLOTS = 16,
    parameter integer JOBS  = 4,
    parameter integer RANKS = 64
) (
    input  wire              clk,
    input  wire              rst,
    input  wire [32*L-1:0]   s_axis_tdata,
    input  wire [4*L-1:0]    s_axis_tkeep,
    input  wire              s_axis_tvalid,
    output wire              s_axis_tready,
    input  wire              s_axis_tlast,
    output wire [32*L-1:0]   m_axis_tdata,
    output wire [4*L-1:0]    m_axis_tkeep,
    output wire              m_axis_tvalid,
    input  wire              m_axis_tready,
    output wire              m_axis_tlast,
    output wire [17:0]       m_axis_tuser,  // {last copy, multicast, rank}
    output wire [32*L-1:0]   host_axis_tdata,
    output wire [4*L-1:0]    host_axis_tkeep,
    output wire              host_axis_tvalid,
    input  wire              host_axis_tready,
    output wire              host_axis_tlast,
    input  wire              cfg_wr_en,
    input  wire [7:0]        cfg_wr_addr,
    input  wire [31:0]       cfg_wr_data,
    input  wire [9:0]        cfg_rd_addr,
    output wire [31:0]       cfg_rd_data,
    output wire              v_valid,
    output wire [1:0]        v_kind,
    output wire [3:0]        v_reason,
    output wire [15:0]       v_rank
);
    localparam integer W   = 4 * L;
    localparam integer DW  = 32 * L;
    localparam integer KW  = K_MAX / L;
    localparam integer SIW = $clog2(SLOTS);
    localparam integer CW  = $clog2(KW + 1);
    localparam integer JW  = (JOBS > 1) ? $clog2(JOBS) : 1;
    localparam integer OPW = 2 + 1 + 1 + CW + SIW + 1 + JW + 16 + 16 + 320 + 6 + 1 + 16;
    localparam integer DSW = 16 + 16 + 320 + 6 + 1 + 16;
    // Beats of the largest Result, rounded up to a power of two (the replication buffer).
    localparam integer RBEATS = 1 << $clog2((24 + 4 * K_MAX + W - 1) / W);
    localparam integer AXW = DW + W + 1;

    // ---- Input register slice and type demux ----
    wire [AXW-1:0] in_q;
    wire in_valid, in_ready;
    sml_skid #(.WIDTH(AXW)) u_in_skid (
        .clk(clk), .rst(rst),
        .s_data({s_axis_tlast, s_axis_tkeep, s_axis_tdata}), .s_valid(s_axis_tvalid),
        .s_ready(s_axis_tready), .m_data(in_q), .m_valid(in_valid), .m_ready(in_ready)
    );
    wire [DW-1:0] d_tdata, h_tdata;
    wire [W-1:0]  d_tkeep, h_tkeep;
    wire d_tvalid, d_tready, d_tlast, h_tvalid, h_tready, h_tlast;
    sml_type_demux #(.W(W)) u_demux (
        .clk(clk), .rst(rst),
        .s_tdata(in_q[DW-1:0]), .s_tkeep(in_q[DW+:W]), .s_tvalid(in_valid),
        .s_tready(in_ready), .s_tlast(in_q[AXW-1]),
        .d_tdata(d_tdata), .d_tkeep(d_tkeep), .d_tvalid(d_tvalid), .d_tready(d_tready),
        .d_tlast(d_tlast),
        .h_tdata(h_tdata), .h_tkeep(h_tkeep), .h_tvalid(h_tvalid), .h_tready(h_tready),
        .h_tlast(h_tlast)
    );
    wire [AXW-1:0] host_q;
    sml_skid #(.WIDTH(AXW)) u_host_skid (
        .clk(clk), .rst(rst),
        .s_data({h_tlast, h_tkeep, h_tdata}), .s_valid(h_tvalid), .s_ready(h_tready),
        .m_data(host_q), .m_valid(host_axis_tvalid), .m_ready(host_axis_tready)
    );
    assign {host_axis_tlast, host_axis_tkeep, host_axis_tdata} = host_q;

    // ---- Parse: payload words and packet metadata ----
    wire [DW-1:0] rx_word;
    wire rx_word_valid, rx_word_ready;
    wire [191:0] rx_hdr;
    wire [15:0] rx_len;
    wire [CW-1:0] rx_words;
    wire rx_meta_valid, rx_meta_ready;
    sml_rx_parse #(.W(W), .KW(KW)) u_parse (
        .clk(clk), .rst(rst),
        .s_tdata(d_tdata), .s_tkeep(d_tkeep), .s_tvalid(d_tvalid), .s_tready(d_tready),
        .s_tlast(d_tlast),
        .p_data(rx_word), .p_valid(rx_word_valid), .p_ready(rx_word_ready),
        .m_hdr(rx_hdr), .m_len(rx_len), .m_words(rx_words), .m_valid(rx_meta_valid),
        .m_ready(rx_meta_ready)
    );
    wire [DW-1:0] pl_word;
    wire pl_valid, pl_ready;
    sml_fifo #(.WIDTH(DW), .DEPTH(2 * KW)) u_payload_fifo (
        .clk(clk), .rst(rst), .s_data(rx_word), .s_valid(rx_word_valid),
        .s_ready(rx_word_ready), .m_data(pl_word), .m_valid(pl_valid), .m_ready(pl_ready)
    );
    wire [192+16+CW-1:0] meta_q;
    wire meta_valid, meta_ready;
    sml_fifo #(.WIDTH(192 + 16 + CW), .DEPTH(4)) u_meta_fifo (
        .clk(clk), .rst(rst), .s_data({rx_words, rx_len, rx_hdr}), .s_valid(rx_meta_valid),
        .s_ready(rx_meta_ready), .m_data(meta_q), .m_valid(meta_valid), .m_ready(meta_ready)
    );

    // ---- Control-plane registers and counters ----
    wire [31:0] epoch;
    wire [15:0] max_count;
    wire [JOBS-1:0] job_valid;
    wire [16*JOBS-1:0] job_id, job_world, job_slot_count;
    wire [SIW*JOBS-1:0] job_slot_lo;
    wire [32*JOBS-1:0] job_session;
    wire clear_start, clear_busy;
    wire [SIW-1:0] clear_lo;
    wire [15:0] clear_count;
    wire [32*20-1:0] counters;
    wire jc_reset;
    wire [JW-1:0] jc_reset_job;
    wire [31:0] jc_data;
    sml_config #(.JOBS(JOBS), .SIW(SIW), .NCNT(20), .JW(JW)) u_config (
        .clk(clk), .rst(rst), .wr_en(cfg_wr_en), .wr_addr(cfg_wr_addr),
        .wr_data(cfg_wr_data), .rd_addr(cfg_rd_addr), .rd_data(cfg_rd_data),
        .epoch(epoch), .max_count(max_count), .job_valid(job_valid), .job_id(job_id),
        .job_world(job_world), .job_slot_count(job_slot_count), .job_slot_lo(job_slot_lo),
        .job_session(job_session), .clear_start(clear_start), .clear_lo(clear_lo),
        .clear_count(clear_count), .clear_busy(clear_busy), .counters(counters),
        .jc_reset(jc_reset), .jc_reset_job(jc_reset_job), .jc_data(jc_data)
    );
    sml_counters u_counters (
        .clk(clk), .rst(rst), .v_valid(v_valid), .v_kind(v_kind), .v_reason(v_reason),
        .counters(counters)
    );

    // ---- Decide ----
    wire [OPW-1:0] op;
    wire op_valid, op_ready;
    wire ev_valid, ovf_valid;
    wire [JW-1:0] ev_job, ovf_job;
    wire [3:0] ev_class;
    sml_job_counters #(.JOBS(JOBS), .JW(JW)) u_job_counters (
        .clk(clk), .rst(rst), .ev_valid(ev_valid), .ev_job(ev_job), .ev_class(ev_class),
        .ovf_valid(ovf_valid), .ovf_job(ovf_job), .reset_valid(jc_reset),
        .reset_job(jc_reset_job), .rd_job(cfg_rd_addr[4+:JW]), .rd_counter(cfg_rd_addr[3:0]),
        .rd_data(jc_data)
    );
    sml_decide #(.SLOTS(SLOTS), .JOBS(JOBS), .RANKS(RANKS), .SIW(SIW), .CW(CW), .JW(JW))
    u_decide (
        .clk(clk), .rst(rst),
        .s_hdr(meta_q[191:0]), .s_len(meta_q[207:192]), .s_words(meta_q[208+:CW]),
        .s_valid(meta_valid), .s_ready(meta_ready),
        .epoch(epoch), .max_count(max_count), .job_valid(job_valid), .job_id(job_id),
        .job_world(job_world), .job_slot_count(job_slot_count), .job_slot_lo(job_slot_lo),
        .job_session(job_session), .clear_start(clear_start), .clear_lo(clear_lo),
        .clear_count(clear_count), .clear_busy(clear_busy),
        .m_op(op), .m_valid(op_valid), .m_ready(op_ready),
        .v_valid(v_valid), .v_kind(v_kind), .v_reason(v_reason), .v_rank(v_rank),
        .ev_valid(ev_valid), .ev_job(ev_job), .ev_class(ev_class)
    );
    wire [OPW-1:0] op_q;
    wire op_q_valid, op_q_ready;
    sml_fifo #(.WIDTH(OPW), .DEPTH(4)) u_op_fifo (
        .clk(clk), .rst(rst), .s_data(op), .s_valid(op_valid), .s_ready(op_ready),
        .m_data(op_q), .m_valid(op_q_valid), .m_ready(op_q_ready)
    );

    // ---- Aggregate ----
    wire [DW-1:0] res_word;
    wire res_valid, res_ready;
    wire [DSW-1:0] desc;
    wire desc_valid, desc_ready;
    sml_aggregate #(.L(L), .SLOTS(SLOTS), .KW(KW), .SIW(SIW), .CW(CW), .JW(JW)) u_aggregate (
        .clk(clk), .rst(rst),
        .s_op(op_q), .s_op_valid(op_q_valid), .s_op_ready(op_q_ready),
        .s_word(pl_word), .s_word_valid(pl_valid), .s_word_ready(pl_ready),
        .m_word(res_word), .m_word_valid(res_valid), .m_word_ready(res_ready),
        .m_desc(desc), .m_desc_valid(desc_valid), .m_desc_ready(desc_ready),
        .ovf_valid(ovf_valid), .ovf_job(ovf_job)
    );
    wire [DW-1:0] resq_word;
    wire resq_valid, resq_ready;
    sml_fifo #(.WIDTH(DW), .DEPTH(2 * KW)) u_result_fifo (
        .clk(clk), .rst(rst), .s_data(res_word), .s_valid(res_valid), .s_ready(res_ready),
        .m_data(resq_word), .m_valid(resq_valid), .m_ready(resq_ready)
    );
    wire [DSW-1:0] desc_q;
    wire desc_q_valid, desc_q_ready;
    sml_fifo #(.WIDTH(DSW), .DEPTH(4)) u_desc_fifo (
        .clk(clk), .rst(rst), .s_data(desc), .s_valid(desc_valid), .s_ready(desc_ready),
        .m_data(desc_q), .m_valid(desc_q_valid), .m_ready(desc_q_ready)
    );

    // ---- Emit and output register slice ----
    wire [DW-1:0] e_tdata;
    wire [W-1:0] e_tkeep;
    wire e_tvalid, e_tready, e_tlast;
    wire [16:0] e_tuser;
    wire [15:0] e_world;
    sml_emit #(.L(L), .DSW(DSW)) u_emit (
        .clk(clk), .rst(rst),
        .s_desc(desc_q), .s_desc_valid(desc_q_valid), .s_desc_ready(desc_q_ready),
        .s_word(resq_word), .s_word_valid(resq_valid), .s_word_ready(resq_ready),
        .m_tdata(e_tdata), .m_tkeep(e_tkeep), .m_tvalid(e_tvalid), .m_tready(e_tready),
        .m_tlast(e_tlast), .m_tuser(e_tuser), .m_world(e_world)
    );
    wire [DW-1:0] r_tdata;
    wire [W-1:0] r_tkeep;
    wire r_tvalid, r_tready, r_tlast;
    wire [17:0] r_tuser;
    sml_replicate #(.W(W), .DEPTH(RBEATS)) u_replicate (
        .clk(clk), .rst(rst),
        .s_tdata(e_tdata), .s_tkeep(e_tkeep), .s_tvalid(e_tvalid), .s_tready(e_tready),
        .s_tlast(e_tlast), .s_tuser(e_tuser), .s_world(e_world),
        .m_tdata(r_tdata), .m_tkeep(r_tkeep), .m_tvalid(r_tvalid), .m_tready(r_tready),
        .m_tlast(r_tlast), .m_tuser(r_tuser)
    );
    wire [AXW+18-1:0] out_q;
    sml_skid #(.WIDTH(AXW + 18)) u_out_skid (
        .clk(clk), .rst(rst),
        .s_data({r_tuser, r_tlast, r_tkeep, r_tdata}), .s_valid(r_tvalid), .s_ready(r_tready),
        .m_data(out_q), .m_valid(m_axis_tvalid), .m_ready(m_axis_tready)
    );
    assign {m_axis_tuser, m_axis_tlast, m_axis_tkeep, m_axis_tdata} = out_q;
endmodule
`default_nettype wire
