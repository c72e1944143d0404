// tb_replicate: sml_replicate under random output stalls: a multicast of 3 beats for a
// world of 3 comes out 3 times, to ranks 0, 1, 2 (last copy flagged on the third), with
// every beat's data and keep; a unicast then comes out once, to its own rank.
`timescale 1ns / 1ps
`default_nettype none
module tb_replicate;
    localparam integer W = 32;
    reg clk = 1'b0;
    reg rst = 1'b1;
    always #5 clk = !clk;

    reg  [8*W-1:0] s_tdata;
    reg  [W-1:0]   s_tkeep;
    reg            s_tvalid, s_tlast;
    reg  [16:0]    s_tuser;
    reg  [15:0]    s_world;
    wire           s_tready;
    wire [8*W-1:0] m_tdata;
    wire [W-1:0]   m_tkeep;
    wire           m_tvalid, m_tlast;
    wire [17:0]    m_tuser;
    reg            m_tready;

    sml_replicate #(.W(W), .DEPTH(4)) dut (
        .clk(clk), .rst(rst), .s_tdata(s_tdata), .s_tkeep(s_tkeep), .s_tvalid(s_tvalid),
        .s_tready(s_tready), .s_tlast(s_tlast), .s_tuser(s_tuser), .s_world(s_world),
        .m_tdata(m_tdata), .m_tkeep(m_tkeep), .m_tvalid(m_tvalid), .m_tready(m_tready),
        .m_tlast(m_tlast), .m_tuser(m_tuser)
    );

    // The input: beats 0..2 of a multicast (world 3), then beat 3, a unicast to rank 9.
    integer in_beat, out_beat, seed, cycles;
    // Expected output beat i: copy c = i / 3 (0..2) of the multicast, beat i % 3; i = 9
    // the unicast.
    task check(input integer i);
        integer c, b;
        begin
            c = (i < 9) ? i / 3 : 0;
            b = (i < 9) ? i % 3 : 3;
            if (m_tdata !== {W{8'(b + 1)}} || m_tkeep !== (b == 2 ? 32'h0000ffff : {W{1'b1}}) ||
                m_tlast !== (b >= 2) ||
                m_tuser !== (i < 9 ? {c == 2, 1'b1, 16'(c)} : {1'b1, 1'b0, 16'd9})) begin
                $display("FAIL: output beat %0d: data %h keep %h last %b user %h", i,
                         m_tdata[7:0], m_tkeep, m_tlast, m_tuser);
                $fatal(1);
            end
        end
    endtask

    initial begin
        seed = 3;
        in_beat = 0;
        out_beat = 0;
        cycles = 0;
        s_tvalid = 1'b0;
        m_tready = 1'b0;
        repeat (3) @(posedge clk);
        rst = 1'b0;
        while (out_beat < 10) begin
            @(negedge clk);
            s_tvalid = (in_beat < 4);
            s_tdata = {W{8'(in_beat + 1)}};
            s_tkeep = (in_beat == 2) ? 32'h0000ffff : {W{1'b1}};
            s_tlast = (in_beat >= 2);
            s_tuser = (in_beat < 3) ? {1'b1, 16'hffff} : {1'b0, 16'd9};
            s_world = 16'd3;
            m_tready = $random(seed) & 1;
            #4;
            if (s_tvalid && s_tready) in_beat = in_beat + 1;
            if (m_tvalid && m_tready) begin
                check(out_beat);
                out_beat = out_beat + 1;
            end
            cycles = cycles + 1;
            if (cycles > 1000) begin
                $display("FAIL: stuck after %0d output beats", out_beat);
                $fatal(1);
            end
        end
        $display("PASS tb_replicate: 3 copies of a multicast, then a unicast");
        $finish;
    end
endmodule
`default_nettype wire
