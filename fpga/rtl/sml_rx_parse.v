// sml_rx_parse: splits a data-path packet into its 24-byte header and its payload.
//
// The header (protocol.md §3.1; a Probe's 20 bytes fit in it too) is captured from the first
// beat; the payload is realigned from byte 24 onto L-lane words (W = 4·L bytes) and pushed
// into the payload FIFO, at most KW = K_MAX / L words (a longer packet is counted but not
// stored: it cannot be valid). When the packet ends, its metadata — header, length in
// bytes (saturating at 65535, which no valid length equals) and words stored — is pushed
// for the decide stage. Beats other than the last must be full (contiguous tkeep).
`default_nettype none
module sml_rx_parse #(
    parameter integer W  = 32, // bytes per beat, >= 32
    parameter integer KW = 32  // payload words a packet may store
) (
    input  wire            clk,
    input  wire            rst,
    input  wire [8*W-1:0]  s_tdata,
    input  wire [W-1:0]    s_tkeep,
    input  wire            s_tvalid,
    output wire            s_tready,
    input  wire            s_tlast,
    // Payload words.
    output reg  [8*W-1:0]  p_data,
    output reg             p_valid,
    input  wire            p_ready,
    // Metadata: {words, len, header}.
    output wire [191:0]    m_hdr,
    output wire [15:0]     m_len,
    output wire [$clog2(KW+1)-1:0] m_words,
    output wire            m_valid,
    input  wire            m_ready
);
    localparam integer HB = 24;       // header bytes
    localparam integer TB = W - HB;   // tail bytes of a beat after the header offset
    localparam integer CW = $clog2(KW + 1);
    localparam [0:0] S_RUN = 1'b0, S_FLUSH = 1'b1;

    reg            state;
    reg            beat0;
    reg [191:0]    hdr;
    reg [8*TB-1:0] tail;
    reg [15:0]     len;
    reg [CW-1:0]   words;
    // The metadata register: written as a packet ends, so that the next packet's first
    // beat can follow its last one in the next cycle.
    reg [191:0]    m_hdr_r;
    reg [15:0]     m_len_r;
    reg [CW-1:0]   m_words_r;
    reg            m_valid_r;

    // Valid bytes of this beat, zeroed past tkeep.
    wire [8*W-1:0] keep_mask;
    genvar gi;
    generate
        for (gi = 0; gi < W; gi = gi + 1) begin : g_mask
            assign keep_mask[8*gi+:8] = {8{s_tkeep[gi]}};
        end
    endgenerate
    wire [8*W-1:0] beat = s_tdata & keep_mask;

    function automatic [15:0] popcount(input [W-1:0] k);
        integer i;
        begin
            popcount = 16'd0;
            for (i = 0; i < W; i = i + 1) popcount = popcount + {15'd0, k[i]};
        end
    endfunction

    wire [15:0] nbytes = popcount(s_tkeep);
    wire [16:0] len_sum = {1'b0, len} + {1'b0, nbytes};
    wire [15:0] len_next = len_sum[16] ? 16'hFFFF : len_sum[15:0];
    wire store = (words < KW[CW-1:0]);
    // A beat after the first completes a payload word: it needs room unless past KW.
    wire p_free = !p_valid || p_ready;
    wire m_free = !m_valid_r || m_ready;
    assign s_tready = (state == S_RUN) && m_free && (beat0 || !store || p_free);
    wire push_beat = !beat0 && store;   // this beat completes a stored word
    wire [191:0] hdr_next = beat0 ? beat[8*HB-1:0] : hdr;
    wire [CW-1:0] words_next = words + {{(CW - 1) {1'b0}}, push_beat};

    assign m_hdr   = m_hdr_r;
    assign m_len   = m_len_r;
    assign m_words = m_words_r;
    assign m_valid = m_valid_r;

    always @(posedge clk) begin
        if (rst) begin
            state     <= S_RUN;
            beat0     <= 1'b1;
            hdr       <= 192'd0;
            tail      <= {8 * TB{1'b0}};
            len       <= 16'd0;
            words     <= {CW{1'b0}};
            p_valid   <= 1'b0;
            p_data    <= {8 * W{1'b0}};
            m_valid_r <= 1'b0;
            m_hdr_r   <= 192'd0;
            m_len_r   <= 16'd0;
            m_words_r <= {CW{1'b0}};
        end else begin
            if (p_valid && p_ready) p_valid <= 1'b0;
            if (m_valid_r && m_ready) m_valid_r <= 1'b0;
            case (state)
                S_RUN: if (s_tvalid && s_tready) begin
                    tail  <= beat[8*W-1:8*HB];
                    beat0 <= s_tlast;
                    if (push_beat) begin
                        p_data  <= {beat[8*HB-1:0], tail};
                        p_valid <= 1'b1;
                    end
                    if (s_tlast && !s_tkeep[HB]) begin
                        // The packet ends in the header offset: its metadata goes now.
                        m_hdr_r   <= hdr_next;
                        m_len_r   <= len_next;
                        m_words_r <= words_next;
                        m_valid_r <= 1'b1;
                        hdr       <= 192'd0;
                        len       <= 16'd0;
                        words     <= {CW{1'b0}};
                    end else begin
                        hdr   <= hdr_next;
                        len   <= len_next;
                        words <= words_next;
                        if (s_tlast) state <= S_FLUSH;
                    end
                end
                S_FLUSH: if ((!store || p_free) && m_free) begin
                    // The last beat's bytes past the header offset make one more word.
                    if (store) begin
                        p_data  <= {{8 * HB{1'b0}}, tail};
                        p_valid <= 1'b1;
                    end
                    m_hdr_r   <= hdr;
                    m_len_r   <= len;
                    m_words_r <= words + {{(CW - 1) {1'b0}}, store};
                    m_valid_r <= 1'b1;
                    hdr       <= 192'd0;
                    len       <= 16'd0;
                    words     <= {CW{1'b0}};
                    state     <= S_RUN;
                end
                default: state <= S_RUN;
            endcase
        end
    end
endmodule
`default_nettype wire
