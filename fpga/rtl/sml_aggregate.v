// sml_aggregate: the slot values and the L int32 adder lanes (protocol.md §4 step 5).
//
// It owns the values of every slot version (K_MAX values = KW words of L lanes each),
// their OVERFLOW bits and their carried flags (protocol.md §5.4, §6.3: the OR of the
// Contributions' flags bits 2-5, the non-finite kinds and CONGESTED, which sml_decide puts in the op's header), and carries out the decide stage's ops in order, one payload word a
// cycle: discard the payload; load it (a use's first contribution); add it lane by lane
// with wrapping int32 addition, noting signed overflow in the lanes below `count`; or read
// the stored sum (a retransmission's answer). An op that answers pushes its result words
// and then its header (with OVERFLOW and the kinds set from the bits) for sml_emit.
//
// Two stages: A pops a payload word and reads the stored word; B adds, writes back and
// pushes. When A reads the address B writes in the same cycle (back-to-back uses of a
// one-word slot), B's new value is forwarded, since the RAM returns the old one.
`default_nettype none
module sml_aggregate #(
    parameter integer L     = 8,
    parameter integer SLOTS = 16,
    parameter integer KW    = 32,  // words a slot version holds: K_MAX / L, a power of two
    parameter integer SIW   = 4,
    parameter integer CW    = 6,
    parameter integer JW    = 2,
    parameter integer OPW   = 2 + 1 + 1 + CW + SIW + 1 + JW + 16 + 16 + 320 + 6 + 1 + 16,
    parameter integer DSW   = 16 + 16 + 320 + 6 + 1 + 16
) (
    input  wire            clk,
    input  wire            rst,
    input  wire [OPW-1:0]  s_op,
    input  wire            s_op_valid,
    output wire            s_op_ready,
    input  wire [32*L-1:0] s_word,
    input  wire            s_word_valid,
    output wire            s_word_ready,
    // Result words (wire byte order) and answer descriptors
    // {world, count, hdr, hlen, mcast, rank}.
    output wire [32*L-1:0] m_word,
    output wire            m_word_valid,
    input  wire            m_word_ready,
    output wire [DSW-1:0]  m_desc,
    output wire            m_desc_valid,
    input  wire            m_desc_ready,
    // A completed use whose sum overflowed, and its job (for sml_job_counters).
    output wire            ovf_valid,
    output wire [JW-1:0]   ovf_job
);
    // Op kinds (sml_decide): 0 discard, 1 load, 2 add, 3 read; only load and add write.
    localparam [1:0] OP_LOAD = 2'd1, OP_ACC = 2'd2;
    localparam integer KWB = $clog2(KW);
    localparam integer AW = SIW + 1 + KWB;
    localparam integer LB = $clog2(L);

    // The op at the head of the queue.
    wire [1:0]     o_kind   = s_op[OPW-1-:2];
    wire           o_emit   = s_op[OPW-3];
    wire           o_result = s_op[OPW-4];
    wire [CW-1:0]  o_words  = s_op[OPW-5-:CW];
    wire [SIW:0]   o_sv     = s_op[OPW-5-CW-:SIW+1];
    wire [DSW-1:0] o_desc   = s_op[DSW-1:0];
    wire [15:0]    o_count  = s_op[DSW-17-:16];
    wire [JW-1:0]  o_job    = s_op[DSW+:JW];

    // ---- Stage A ----
    reg  [CW-1:0] a_i;   // token within the op
    wire a_data = (o_words != {CW{1'b0}});
    wire a_last = !a_data || (a_i == o_words - 1'b1);
    reg  b_valid;
    wire b_fire;
    wire b_free = !b_valid || b_fire;
    wire a_fire = s_op_valid && (!a_data || s_word_valid) && b_free;
    assign s_op_ready   = a_fire && a_last;
    assign s_word_ready = a_fire && a_data;
    wire [AW-1:0] a_addr = {o_sv, a_i[KWB-1:0]};

    wire [32*L-1:0] ram_old;
    wire            b_write;
    wire [AW-1:0]   b_addr;
    wire [32*L-1:0] b_new;
    sml_ram #(.WIDTH(32 * L), .DEPTH(2 * SLOTS * KW)) u_values (
        .clk(clk),
        .rd_en(a_fire && a_data), .rd_addr(a_addr), .rd_data(ram_old),
        .wr_en(b_fire && b_write), .wr_addr(b_addr), .wr_data(b_new)
    );

    // ---- Stage B registers ----
    reg [1:0]     b_kind;
    reg           b_emit, b_result, b_data, b_last, b_first;
    reg [CW-1:0]  b_i;
    reg [SIW:0]   b_sv;
    reg [JW-1:0]  b_job;
    reg [15:0]    b_count;
    reg [DSW-1:0] b_desc;
    reg [32*L-1:0] b_in;
    reg           b_fwd;
    reg [32*L-1:0] b_fwd_word;
    reg           b_ovf_run;     // overflow in the earlier words of this op
    reg [2*SLOTS-1:0] ovf_bits;  // OVERFLOW of each slot version's use
    reg [4*2*SLOTS-1:0] nf_bits; // the carried flags (POS_INF, NEG_INF, NAN, CONGESTED), likewise

    assign b_addr  = {b_sv, b_i[KWB-1:0]};
    assign b_write = b_data && (b_kind == OP_LOAD || b_kind == OP_ACC);
    wire [32*L-1:0] old = b_fwd ? b_fwd_word : ram_old;

    // The lanes: big-endian wire bytes in, int32 arithmetic, big-endian bytes out.
    reg [32*L-1:0] sum_word;
    reg            lane_ovf;
    integer l;
    reg [31:0] x, y, s, idx;
    always @* begin
        lane_ovf = 1'b0;
        sum_word = {32 * L{1'b0}};
        for (l = 0; l < L; l = l + 1) begin
            x = {b_in[32*l+:8], b_in[32*l+8+:8], b_in[32*l+16+:8], b_in[32*l+24+:8]};
            y = {old[32*l+:8], old[32*l+8+:8], old[32*l+16+:8], old[32*l+24+:8]};
            s = x + y;
            idx = {{(32 - CW - LB) {1'b0}}, b_i, {LB{1'b0}}} + l;
            if (idx < {16'd0, b_count} && (x[31] == y[31]) && (s[31] != y[31]))
                lane_ovf = 1'b1;
            sum_word[32*l+:32] = {s[7:0], s[15:8], s[23:16], s[31:24]};
        end
    end
    assign b_new = (b_kind == OP_LOAD) ? b_in : (b_kind == OP_ACC) ? sum_word : old;

    wire ovf_now = (b_first ? 1'b0 : b_ovf_run) | (b_kind == OP_ACC && b_data && lane_ovf);
    wire ovf_final = (b_kind == OP_LOAD) ? 1'b0 :
                     (b_kind == OP_ACC) ? (ovf_bits[b_sv] | ovf_now) : ovf_bits[b_sv];
    wire push_word = b_data && b_emit && b_result;
    wire push_desc = b_last && b_emit;
    assign b_fire = b_valid && (!push_word || m_word_ready) && (!push_desc || m_desc_ready);

    assign m_word       = b_new;
    assign m_word_valid = b_valid && push_word && (!push_desc || m_desc_ready);
    // OVERFLOW is bit 0 of a Result's flags, byte 9 of its header, above hlen/mcast/rank;
    // the carried flags (non-finite kinds, CONGESTED) are bits 2-5. A load takes the Contribution's kinds, an add ORs
    // them in, a read (a resend's answer) gives the use's alone.
    localparam integer FLAGS_AT = 72 + 6 + 1 + 16;
    wire [DSW-1:0] ovf_patch = {{(DSW - 1) {1'b0}}, 1'b1} << FLAGS_AT;
    wire [3:0] b_kinds  = b_desc[FLAGS_AT+2+:4];
    wire [3:0] nf_held  = nf_bits[4*b_sv+:4];
    wire [3:0] nf_final = (b_kind == OP_LOAD) ? b_kinds :
                          (b_kind == OP_ACC) ? (nf_held | b_kinds) : nf_held;
    wire [DSW-1:0] nf_mask  = {{(DSW - 4) {1'b0}}, 4'b1111} << (FLAGS_AT + 2);
    wire [DSW-1:0] nf_patch = {{(DSW - 4) {1'b0}}, nf_final} << (FLAGS_AT + 2);
    wire [DSW-1:0] result_desc = (b_desc & ~nf_mask) | nf_patch |
                                 (ovf_final ? ovf_patch : {DSW{1'b0}});
    assign m_desc       = b_result ? result_desc : b_desc;
    assign m_desc_valid = b_valid && push_desc && (!push_word || m_word_ready);
    // The reference counts an overflow when a use completes (multicast), not on a resend.
    assign ovf_valid = b_fire && b_last && b_kind == OP_ACC && push_desc && b_desc[16] &&
                       ovf_final;
    assign ovf_job   = b_job;

    always @(posedge clk) begin
        if (rst) begin
            a_i       <= {CW{1'b0}};
            b_valid   <= 1'b0;
            b_ovf_run <= 1'b0;
            ovf_bits  <= {2 * SLOTS{1'b0}};
            nf_bits   <= {4 * 2 * SLOTS{1'b0}};
            b_fwd     <= 1'b0;
        end else begin
            if (b_fire) begin
                b_ovf_run <= ovf_now;
                if (b_last && b_kind == OP_LOAD) ovf_bits[b_sv] <= 1'b0;
                if (b_last && b_kind == OP_ACC) ovf_bits[b_sv] <= ovf_final;
                if (b_last && (b_kind == OP_LOAD || b_kind == OP_ACC))
                    nf_bits[4*b_sv+:4] <= nf_final;
            end
            if (b_fire && !a_fire) b_valid <= 1'b0;
            if (a_fire) begin
                a_i        <= a_last ? {CW{1'b0}} : a_i + 1'b1;
                b_valid    <= 1'b1;
                b_kind     <= o_kind;
                b_emit     <= o_emit;
                b_result   <= o_result;
                b_data     <= a_data;
                b_last     <= a_last;
                b_first    <= (a_i == {CW{1'b0}});
                b_i        <= a_i;
                b_sv       <= o_sv;
                b_job      <= o_job;
                b_count    <= o_count;
                b_desc     <= o_desc;
                b_in       <= s_word;
                b_fwd      <= b_fire && b_write && (b_addr == a_addr);
                b_fwd_word <= b_new;
            end
        end
    end
endmodule
`default_nettype wire
