// sml_emit: writes each answer onto the output stream: the header the decide stage built
// (Result 24 bytes, ProbeReply 28 + bitmap bytes, Abort 20), then for a Result its
// `count` values, realigned from L-lane words onto beats at byte offset 24. tuser carries
// the destination: multicast (every rank of the job, replicated downstream) or one rank.
`default_nettype none
module sml_emit #(
    parameter integer L   = 8,
    parameter integer DSW = 16 + 16 + 320 + 6 + 1 + 16
) (
    input  wire            clk,
    input  wire            rst,
    input  wire [DSW-1:0]  s_desc,
    input  wire            s_desc_valid,
    output wire            s_desc_ready,
    input  wire [32*L-1:0] s_word,
    input  wire            s_word_valid,
    output wire            s_word_ready,
    output wire [32*L-1:0] m_tdata,
    output wire [4*L-1:0]  m_tkeep,
    output wire            m_tvalid,
    input  wire            m_tready,
    output wire            m_tlast,
    output wire [16:0]     m_tuser, // {multicast, rank}
    output wire [15:0]     m_world  // ranks of the job, for sml_replicate
);
    localparam integer W  = 4 * L;
    localparam integer WB = $clog2(W);
    localparam integer LB = $clog2(L);
    localparam integer HB = 24;

    wire [15:0]  count = s_desc[DSW-17-:16];
    wire [319:0] hdr   = s_desc[DSW-33-:320];
    assign m_world = s_desc[DSW-1-:16];
    wire [5:0]   hlen  = s_desc[22:17];
    assign m_tuser = s_desc[16:0];

    wire [15:0] nw    = (count + L[15:0] - 16'd1) >> LB;        // payload words
    wire [17:0] total = {12'd0, hlen} + {count, 2'b00};         // bytes
    wire [17:0] beats = (total + W[17:0] - 18'd1) >> WB;
    wire [17:0] last_bytes = total - ((beats - 18'd1) << WB);

    reg  [15:0]     j;       // beat index
    reg  [8*HB-1:0] carry;   // the top 24 bytes of the previous word
    wire need_word = (j < nw);
    wire last = ({2'd0, j} == beats - 18'd1);
    wire [32*L-1:0] word = need_word ? s_word : {32 * L{1'b0}};

    // A header-only answer (count 0: a ProbeReply, an Abort) takes one beat, or two where a
    // ProbeReply of many ranks is longer than a beat (36 bytes at L = 8); W >= 20 (L >= 5).
    wire [16*W-1:0] hdr_x = {{(16 * W - 320) {1'b0}}, hdr};
    wire [8*W-1:0]  hdr_beat = (j == 16'd0) ? hdr_x[0+:8*W] : hdr_x[8*W+:8*W];
    wire [8*W-1:0]  beat0 = {word[8*(W-HB)-1:0], hdr[8*HB-1:0]};
    assign m_tdata  = (count == 16'd0) ? hdr_beat
                    : (j == 16'd0) ? beat0 : {word[8*(W-HB)-1:0], carry};
    assign m_tkeep  = last ? ({W{1'b1}} >> (W[17:0] - last_bytes)) : {W{1'b1}};
    assign m_tlast  = last;
    assign m_tvalid = s_desc_valid && (!need_word || s_word_valid);
    wire fire = m_tvalid && m_tready;
    assign s_word_ready = fire && need_word;
    assign s_desc_ready = fire && last;

    always @(posedge clk) begin
        if (rst) begin
            j     <= 16'd0;
            carry <= {8 * HB{1'b0}};
        end else if (fire) begin
            j     <= last ? 16'd0 : j + 16'd1;
            carry <= word[8*W-1:8*(W-HB)];
        end
    end
endmodule
`default_nettype wire
