// tb_skid_fifo: sml_skid → sml_fifo → sml_skid under random valid and ready: every word
// comes out once, in order, and the chain moves a word a cycle when nothing stalls.
`timescale 1ns / 1ps
`default_nettype none
module tb_skid_fifo;
    reg clk = 1'b0;
    reg rst = 1'b1;
    always #5 clk = !clk;

    reg  [15:0] s_data;
    reg         s_valid;
    wire        s_ready;
    wire [15:0] a_data, b_data, m_data;
    wire        a_valid, a_ready, b_valid, b_ready, m_valid;
    reg         m_ready;

    sml_skid #(.WIDTH(16)) u_in (
        .clk(clk), .rst(rst), .s_data(s_data), .s_valid(s_valid), .s_ready(s_ready),
        .m_data(a_data), .m_valid(a_valid), .m_ready(a_ready)
    );
    sml_fifo #(.WIDTH(16), .DEPTH(4)) u_fifo (
        .clk(clk), .rst(rst), .s_data(a_data), .s_valid(a_valid), .s_ready(a_ready),
        .m_data(b_data), .m_valid(b_valid), .m_ready(b_ready)
    );
    sml_skid #(.WIDTH(16)) u_out (
        .clk(clk), .rst(rst), .s_data(b_data), .s_valid(b_valid), .s_ready(b_ready),
        .m_data(m_data), .m_valid(m_valid), .m_ready(m_ready)
    );

    integer sent, got, cycles, seed, phase;
    reg in_fire;
    initial begin
        seed = 7;
        sent = 0;
        in_fire = 1'b0;
        got = 0;
        s_valid = 1'b0;
        s_data = 16'd0;
        m_ready = 1'b0;
        repeat (3) @(posedge clk);
        rst = 1'b0;
        // Phase 0: random stalls on both sides; phase 1: none, timed.
        for (phase = 0; phase < 2; phase = phase + 1) begin
            cycles = 0;
            while (got < (phase == 0 ? 2000 : 3000)) begin
                @(negedge clk);
                if (!s_valid || in_fire) begin
                    // The word offered last cycle was taken (or none was offered).
                    s_valid = (phase == 1) || ($random(seed) & 1);
                    s_data = sent[15:0];
                end
                m_ready = (phase == 1) || ($random(seed) & 1);
                #4;  // just before the edge: the handshakes it will see
                in_fire = s_valid && s_ready;
                if (in_fire) sent = sent + 1;
                if (m_valid && m_ready) begin
                    if (m_data !== got[15:0]) begin
                        $display("FAIL: word %0d came out as %0d", got, m_data);
                        $fatal(1);
                    end
                    got = got + 1;
                end
                cycles = cycles + 1;
                if (cycles > 100000) begin
                    $display("FAIL: stuck at %0d words", got);
                    $fatal(1);
                end
            end
            if (phase == 1 && cycles > 1000 + 10) begin
                $display("FAIL: 1000 words took %0d cycles without stalls", cycles);
                $fatal(1);
            end
        end
        $display("PASS tb_skid_fifo: %0d words in order", got);
        $finish;
    end
endmodule
`default_nettype wire
