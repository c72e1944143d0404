// sml_decide: the switch's decisions, protocol.md §4, for the data path. It classifies a
// packet (parse checks, job, session, rank, count, version, slot), reads the slot version's
// registers — used, session, seq, seen bitmap, remaining, max exponent, count — once,
// decides the next step (drop with a reason / absorb / Result to all / unicast
// retransmission / ProbeReply / a Probe's Abort refusal) and writes the registers back
// once. The values are the aggregate stage's: an op tells it to discard the payload, load
// it, add it or read the stored sum, and which header to send the answer with. A verdict
// pulse a packet feeds the counters.
//
// Two stages, a packet a cycle: stage 1 classifies and reads the registers, stage 2 decides,
// writes them back and sends the op. When stage 1 reads the word stage 2 writes on the same
// edge (back-to-back packets of one slot version), stage 2's new word is forwarded.
`default_nettype none
module sml_decide #(
    parameter integer SLOTS = 16,
    parameter integer JOBS  = 4,
    parameter integer RANKS = 64,
    parameter integer SIW   = 4,    // pool slot index width
    parameter integer CW    = 6,    // width of a payload word count
    parameter integer JW    = 2,    // width of a job table index
    parameter integer OPW   = 2 + 1 + 1 + CW + SIW + 1 + JW + 16 + 16 + 320 + 6 + 1 + 16
) (
    input  wire                clk,
    input  wire                rst,
    // Packet metadata from sml_rx_parse.
    input  wire [191:0]        s_hdr,
    input  wire [15:0]         s_len,
    input  wire [CW-1:0]       s_words,
    input  wire                s_valid,
    output wire                s_ready,
    // Configuration (sml_config).
    input  wire [31:0]         epoch,
    input  wire [15:0]         max_count,
    input  wire [JOBS-1:0]     job_valid,
    input  wire [16*JOBS-1:0]  job_id,
    input  wire [16*JOBS-1:0]  job_world,
    input  wire [16*JOBS-1:0]  job_slot_count,
    input  wire [SIW*JOBS-1:0] job_slot_lo,
    input  wire [32*JOBS-1:0]  job_session,
    input  wire                clear_start,
    input  wire [SIW-1:0]      clear_lo,
    input  wire [15:0]         clear_count,
    output wire                clear_busy,
    // Ops for sml_aggregate: {op, emit, result, words, sv, job, world, count, hdr, hlen,
    // mcast, rank}.
    output reg  [OPW-1:0]      m_op,
    output reg                 m_valid,
    input  wire                m_ready,
    // One verdict a packet: 0 consumed, 1 drop (reason), 2 multicast, 3 unicast (rank).
    output reg                 v_valid,
    output reg  [1:0]          v_kind,
    output reg  [3:0]          v_reason,
    output reg  [15:0]         v_rank,
    // The same packet's event for its job's counters (sml_job_counters).
    output reg                 ev_valid,
    output reg  [JW-1:0]       ev_job,
    output reg  [3:0]          ev_class
);
    // Drop reasons, in counter order (protocol.md §3.8).
    localparam [3:0] R_MALFORMED = 4'd0, R_UNKNOWN_TYPE = 4'd1, R_UNEXPECTED_TYPE = 4'd2,
        R_UNKNOWN_JOB = 4'd3, R_UNKNOWN_RANK = 4'd4, R_SLOT_RANGE = 4'd5,
        R_COUNT_TOO_LARGE = 4'd6, R_BAD_VERSION = 4'd7, R_STALE = 4'd8, R_DUPLICATE = 4'd9,
        R_COUNT_MISMATCH = 4'd10, R_BAD_SESSION = 4'd12;
    localparam [1:0] V_CONSUMED = 2'd0, V_DROP = 2'd1, V_MULTICAST = 2'd2, V_UNICAST = 2'd3;
    localparam [1:0] OP_DISCARD = 2'd0, OP_LOAD = 2'd1, OP_ACC = 2'd2, OP_READ = 2'd3;
    // Slot version registers, packed: {count, exp, remaining, seen, seq, session, used}.
    localparam integer MW = 1 + 32 + 32 + RANKS + 16 + 8 + 16;
    localparam integer M_SESSION = 1, M_SEQ = 33, M_SEEN = 65, M_REM = 65 + RANKS;
    localparam integer M_EXP = M_REM + 16, M_COUNT = M_EXP + 8;
    localparam integer RW = $clog2(RANKS);

    // Stage 1: the packet being classified (header bytes, length, stored payload words).
    reg          v1;
    reg [191:0]  h;
    reg [15:0]   len;
    reg [CW-1:0] words;
    function automatic [7:0] b(input integer i);
        b = h[8*i+:8];
    endfunction
    wire [7:0]  f_version = b(0);
    wire [7:0]  f_type    = b(1);
    wire [15:0] f_job     = {b(2), b(3)};
    wire [15:0] f_rank    = {b(4), b(5)};
    wire [15:0] f_slot    = {b(6), b(7)};
    wire [7:0]  f_ver     = b(8);
    wire [15:0] f_count   = {b(10), b(11)};
    wire        f_seq0    = h[8*15];       // seq mod 2 (seq is bytes 12-15)
    wire        is_probe  = (f_type == 8'h12);
    // A Probe carries its session at byte 16, a Contribution at byte 20.
    wire [31:0] f_session = is_probe ? {b(16), b(17), b(18), b(19)}
                                     : {b(20), b(21), b(22), b(23)};

    // Job lookup: a small CAM over the job table.
    reg            hit;
    reg [JW-1:0]   j_index;
    reg [15:0]     j_world, j_slot_count;
    reg [SIW-1:0]  j_slot_lo;
    reg [31:0]     j_session;
    integer ji;
    always @* begin
        hit = 1'b0;
        j_index = {JW{1'b0}};
        j_world = 16'd0;
        j_slot_count = 16'd0;
        j_slot_lo = {SIW{1'b0}};
        j_session = 32'd0;
        for (ji = JOBS - 1; ji >= 0; ji = ji - 1) begin
            if (job_valid[ji] && job_id[16*ji+:16] == f_job) begin
                hit = 1'b1;
                j_index = ji[JW-1:0];
                j_world = job_world[16*ji+:16];
                j_slot_count = job_slot_count[16*ji+:16];
                j_slot_lo = job_slot_lo[SIW*ji+:SIW];
                j_session = job_session[32*ji+:32];
            end
        end
    end

    // ---- Classification (protocol.md §4, "first classified"; §4 Probe) ----
    wire [18:0] data_len = 19'd24 + {1'b0, f_count, 2'b00};
    wire prefix_bad = (len < 16'd6) || (f_version != 8'd1);
    wire contrib_bad = ({3'd0, len} != data_len) || (f_ver > 8'd1) || (b(17) != 8'd0) ||
                       (b(18) != 8'd0) || (b(19) != 8'd0);
    wire probe_bad = (len != 16'd20) || (f_ver > 8'd1) || (b(9) != 8'd0) ||
                     (b(10) != 8'd0) || (b(11) != 8'd0);
    wire unexpected = (f_type == 8'h02) || (f_type == 8'h11) || (f_type == 8'h13) ||
                      (f_type == 8'h16) || (f_type == 8'h18);
    wire admits = hit && (j_session != 32'd0) && (j_session == f_session);
    wire rank_bad = (f_rank >= j_world);
    wire slot_bad = (f_slot >= j_slot_count);

    reg       need_meta;    // the packet goes on to the slot's registers
    reg [1:0] vk_classify;
    reg [3:0] vr_classify;
    reg [7:0] abort_reason; // a Probe refused with an Abort (0: none)
    reg [15:0] abort_detail;
    always @* begin
        need_meta = 1'b0;
        vk_classify = V_DROP;
        vr_classify = R_MALFORMED;
        abort_reason = 8'd0;
        abort_detail = 16'd0;
        if (prefix_bad) vr_classify = R_MALFORMED;
        else if (f_type == 8'h01) begin
            if (contrib_bad) vr_classify = R_MALFORMED;
            else if (!hit) vr_classify = R_UNKNOWN_JOB;
            else if (!admits) vr_classify = R_BAD_SESSION;
            else if (rank_bad) vr_classify = R_UNKNOWN_RANK;
            else if (f_count > max_count) vr_classify = R_COUNT_TOO_LARGE;
            else if (f_ver[0] != f_seq0) vr_classify = R_BAD_VERSION;
            else if (slot_bad) vr_classify = R_SLOT_RANGE;
            else need_meta = 1'b1;
        end else if (is_probe) begin
            if (probe_bad) vr_classify = R_MALFORMED;
            else begin
                vk_classify = V_UNICAST;
                if (!hit) abort_reason = 8'd1;                 // UnknownJob
                else if (!admits) abort_reason = 8'd12;        // SessionEnded
                else if (rank_bad) begin
                    abort_reason = 8'd2;                       // UnknownRank
                    abort_detail = j_world;
                end else if (slot_bad) begin
                    abort_reason = 8'd4;                       // SlotRange
                    abort_detail = j_slot_count;
                end else need_meta = 1'b1;
            end
        end else if (unexpected) vr_classify = R_UNEXPECTED_TYPE;
        else vr_classify = R_UNKNOWN_TYPE;
        // Join, Abort, Status and Leave never get here: sml_type_demux sends them to the host.
    end

    // ---- Stage 2: the packet being decided, with its classification ----
    reg              v2;
    reg  [191:0]     h2;
    reg  [CW-1:0]    words2;
    reg              need_meta2;
    reg  [1:0]       vk_classify2;
    reg  [3:0]       vr_classify2;
    reg  [7:0]       abort_reason2;
    reg  [15:0]      abort_detail2;
    reg  [15:0]      world2;
    reg  [SIW:0]     addr2;
    reg              hit2;
    reg  [JW-1:0]    job2;
    reg              fwd2;        // the registers come from stage 2's own last write
    reg  [MW-1:0]    fwd_meta2;
    function automatic [7:0] b2(input integer i);
        b2 = h2[8*i+:8];
    endfunction
    wire [15:0] g_job     = {b2(2), b2(3)};
    wire [15:0] g_rank    = {b2(4), b2(5)};
    wire [15:0] g_slot    = {b2(6), b2(7)};
    wire [7:0]  g_ver     = b2(8);
    wire [15:0] g_count   = {b2(10), b2(11)};
    wire [31:0] g_seq     = {b2(12), b2(13), b2(14), b2(15)};
    wire [7:0]  g_exp     = b2(16);
    // A Contribution's carried flags (bits 2-5: the non-finite kinds, protocol.md §5.4, and
    // CONGESTED, §6.3), which ride to sml_aggregate in the op's Result header (byte 9) to
    // be ORed into the use's.
    wire [7:0]  g_kinds   = b2(9) & 8'h3C;
    wire        g_probe   = (b2(1) == 8'h12);
    wire [31:0] g_session = g_probe ? {b2(16), b2(17), b2(18), b2(19)}
                                    : {b2(20), b2(21), b2(22), b2(23)};

    // ---- Slot version registers: one read (stage 1) and one write (stage 2) a packet ----
    wire [SIW:0]  meta_addr = {j_slot_lo + f_slot[SIW-1:0], f_ver[0]};
    wire [MW-1:0] meta_ram;
    reg           meta_write;
    reg  [MW-1:0] meta_next;
    reg           clear_pending;
    reg           clearing_now;
    reg  [SIW:0]  clear_addr;
    reg  [16:0]   clear_left;
    wire out_free = !m_valid || m_ready;
    wire finish2  = v2 && out_free;                 // stage 2 hands its op on
    wire advance1 = v1 && (!v2 || finish2);         // stage 1 moves to stage 2
    wire write2   = finish2 && need_meta2 && meta_write;
    wire clearing = clearing_now && (clear_left != 17'd0);
    sml_ram #(.WIDTH(MW), .DEPTH(2 * SLOTS)) u_meta (
        .clk(clk),
        .rd_en(advance1 && need_meta), .rd_addr(meta_addr), .rd_data(meta_ram),
        .wr_en(write2 || clearing), .wr_addr(clearing ? clear_addr : addr2),
        .wr_data(clearing ? {MW{1'b0}} : meta_next)
    );
    wire [MW-1:0] meta = fwd2 ? fwd_meta2 : meta_ram;

    // ---- The next step (protocol.md §4 steps 1-6; Probe) ----
    wire        m_used    = meta[0];
    wire [31:0] m_session = meta[M_SESSION+:32];
    wire [31:0] m_seq     = meta[M_SEQ+:32];
    wire [RANKS-1:0] m_seen = meta[M_SEEN+:RANKS];
    wire [15:0] m_rem     = meta[M_REM+:16];
    wire [7:0]  m_exp     = meta[M_EXP+:8];
    wire [15:0] m_count   = meta[M_COUNT+:16];
    wire        in_session = m_used && (m_session == g_session);
    wire [31:0] seq_diff  = g_seq - m_seq;
    wire        newer     = !seq_diff[31] && (seq_diff != 32'd0);
    wire        begins    = !in_session || newer;
    // The registers after step 1.
    wire [RANKS-1:0] u_seen = begins ? {RANKS{1'b0}} : m_seen;
    wire [15:0] u_rem   = begins ? world2 : m_rem;
    wire [7:0]  u_exp   = begins ? 8'd0 : m_exp;
    wire [15:0] u_count = begins ? g_count : m_count;
    wire [RANKS-1:0] rank_bit = {{(RANKS - 1) {1'b0}}, 1'b1} << g_rank[RW-1:0];
    wire [7:0]  a_exp   = (g_exp > u_exp) ? g_exp : u_exp;
    wire [15:0] a_rem   = u_rem - 16'd1;

    reg [1:0]   vk_decide;
    reg [3:0]   vr_decide;
    reg [1:0]   op_kind;
    reg         emit_result;
    reg         mcast;
    reg         idle_version;
    always @* begin
        vk_decide = V_DROP;
        vr_decide = R_STALE;
        op_kind = OP_DISCARD;
        emit_result = 1'b0;
        mcast = 1'b0;
        meta_write = 1'b0;
        meta_next = {u_count, a_exp, a_rem, u_seen | rank_bit, g_seq, g_session, 1'b1};
        idle_version = !in_session;
        if (g_probe) begin
            vk_decide = V_UNICAST;
        end else if (!begins && g_seq != m_seq) begin
            vr_decide = R_STALE;                                     // 1. older use
        end else if (u_rem == 16'd0) begin                           // 2. completed use
            if (g_count != u_count) vr_decide = R_COUNT_MISMATCH;
            else begin
                vk_decide = V_UNICAST;
                op_kind = OP_READ;
                emit_result = 1'b1;
            end
        end else if ((u_seen & rank_bit) != {RANKS{1'b0}}) begin
            vr_decide = R_DUPLICATE;                                 // 3.
        end else if (g_count != u_count) begin
            vr_decide = R_COUNT_MISMATCH;                            // 4.
        end else begin                                               // 5. aggregate
            meta_write = 1'b1;
            op_kind = (u_rem == world2) ? OP_LOAD : OP_ACC;
            if (a_rem == 16'd0) begin                                // 6. complete
                vk_decide = V_MULTICAST;
                emit_result = 1'b1;
                mcast = 1'b1;
            end else vk_decide = V_CONSUMED;
        end
    end

    // ---- Answer headers ----
    wire [319:0] result_hdr, probe_hdr, abort_hdr;
    wire [5:0]   hlen_probe;
    sml_reply_builder #(.RANKS(RANKS)) u_reply (
        .job(g_job), .rank(g_rank), .slot(g_slot), .ver(g_ver), .seq(g_seq),
        .session(g_session), .epoch(epoch), .world(world2),
        .mcast(mcast), .count(u_count), .exp(mcast ? a_exp : u_exp),
        .idle(idle_version), .held_remaining(m_rem), .held_seq(m_seq), .held_seen(m_seen),
        .abort_reason(abort_reason2), .abort_detail(abort_detail2),
        .result_hdr(result_hdr), .probe_hdr(probe_hdr), .probe_len(hlen_probe),
        .abort_hdr(abort_hdr)
    );

    wire [OPW-1:0] op_classify = {OP_DISCARD, g_probe && vk_classify2 == V_UNICAST, 1'b0,
        words2, addr2, job2, world2, 16'd0, abort_hdr, 6'd20, 1'b0, g_rank};
    wire [OPW-1:0] op_decide = g_probe
        ? {OP_DISCARD, 1'b1, 1'b0, words2, addr2, job2, world2, 16'd0, probe_hdr, hlen_probe,
           1'b0, g_rank}
        : {op_kind, emit_result, emit_result, words2, addr2, job2, world2, u_count,
           result_hdr | ({312'd0, g_kinds} << 72), 6'd24, mcast, g_rank};

    // ---- The job's counters: which one this packet moves (the reference's JobCounters) ----
    reg [3:0] ev_now;
    always @* begin
        ev_now = 4'd0;
        if (need_meta2) begin
            if (g_probe) ev_now = 4'd7;                              // probes
            else case (vk_decide)
                V_CONSUMED:  ev_now = 4'd1;                          // contributions
                V_MULTICAST: ev_now = 4'd2;                          // + completions
                V_UNICAST:   ev_now = 4'd3;                          // retransmit_replies
                default: case (vr_decide)
                    R_DUPLICATE:      ev_now = 4'd4;
                    R_STALE:          ev_now = 4'd5;
                    R_COUNT_MISMATCH: ev_now = 4'd6;                 // rejected
                    default: ;
                endcase
            endcase
        end else if (g_probe) begin
            if (vk_classify2 == V_UNICAST && abort_reason2 == 8'd12) ev_now = 4'd8;
        end else if (vk_classify2 == V_DROP) begin
            case (vr_classify2)
                R_BAD_SESSION: ev_now = 4'd8;                        // unauthorized
                R_UNKNOWN_RANK, R_COUNT_TOO_LARGE, R_BAD_VERSION, R_SLOT_RANGE: ev_now = 4'd6;
                default: ;
            endcase
        end
    end

    // ---- Sequencing ----
    wire take = s_valid && !clear_pending && (!v1 || advance1);
    assign s_ready = take;
    assign clear_busy = clear_pending;

    always @(posedge clk) begin
        if (rst) begin
            v1            <= 1'b0;
            v2            <= 1'b0;
            m_valid       <= 1'b0;
            m_op          <= {OPW{1'b0}};
            v_valid       <= 1'b0;
            v_kind        <= V_CONSUMED;
            v_reason      <= 4'd0;
            v_rank        <= 16'd0;
            ev_valid      <= 1'b0;
            ev_job        <= {JW{1'b0}};
            ev_class      <= 4'd0;
            hit2          <= 1'b0;
            job2          <= {JW{1'b0}};
            clear_pending <= 1'b0;
            clearing_now  <= 1'b0;
            clear_addr    <= {(SIW + 1) {1'b0}};
            clear_left    <= 17'd0;
            h             <= 192'd0;
            len           <= 16'd0;
            words         <= {CW{1'b0}};
            h2            <= 192'd0;
            words2        <= {CW{1'b0}};
            need_meta2    <= 1'b0;
            vk_classify2  <= V_DROP;
            vr_classify2  <= R_MALFORMED;
            abort_reason2 <= 8'd0;
            abort_detail2 <= 16'd0;
            world2        <= 16'd0;
            addr2         <= {(SIW + 1) {1'b0}};
            fwd2          <= 1'b0;
            fwd_meta2     <= {MW{1'b0}};
        end else begin
            v_valid  <= 1'b0;
            ev_valid <= 1'b0;
            if (m_valid && m_ready) m_valid <= 1'b0;
            if (finish2) begin
                m_op     <= need_meta2 ? op_decide : op_classify;
                m_valid  <= 1'b1;
                v_valid  <= 1'b1;
                v_kind   <= need_meta2 ? vk_decide : vk_classify2;
                v_reason <= need_meta2 ? vr_decide : vr_classify2;
                v_rank   <= g_rank;
                ev_valid <= hit2 && (ev_now != 4'd0);
                ev_job   <= job2;
                ev_class <= ev_now;
                v2       <= 1'b0;
            end
            if (advance1) begin
                v2            <= 1'b1;
                h2            <= h;
                words2        <= words;
                need_meta2    <= need_meta;
                vk_classify2  <= vk_classify;
                vr_classify2  <= vr_classify;
                abort_reason2 <= abort_reason;
                abort_detail2 <= abort_detail;
                world2        <= j_world;
                hit2          <= hit;
                job2          <= j_index;
                addr2         <= meta_addr;
                fwd2          <= write2 && (addr2 == meta_addr);
                fwd_meta2     <= meta_next;
                v1            <= 1'b0;
            end
            if (take) begin
                v1    <= 1'b1;
                h     <= s_hdr;
                len   <= s_len;
                words <= s_words;
            end
            // Clearing a slot range: only while both stages are empty (the host quiesces).
            if (clear_start) begin
                clear_pending <= 1'b1;
                clear_addr    <= {clear_lo, 1'b0};
                clear_left    <= {clear_count, 1'b0};
            end else if (clear_pending && !clearing_now && !v1 && !v2) begin
                clearing_now <= 1'b1;
            end else if (clearing) begin
                clear_addr <= clear_addr + 1'b1;
                clear_left <= clear_left - 1'b1;
            end else if (clearing_now) begin
                clearing_now  <= 1'b0;
                clear_pending <= 1'b0;
            end
        end
    end
endmodule
`default_nettype wire
