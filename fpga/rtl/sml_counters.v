// sml_counters: one counter per verdict class of the data path, fed by the decide stage's
// verdict port: drops by reason (indices 0..15, the order of protocol.md §3.8's drop
// classes), then data-path packets received, consumed, multicast and unicast.
`default_nettype none
module sml_counters (
    input  wire          clk,
    input  wire          rst,
    input  wire          v_valid,
    input  wire [1:0]    v_kind,   // 0 consumed, 1 drop, 2 multicast, 3 unicast
    input  wire [3:0]    v_reason,
    output wire [32*20-1:0] counters
);
    reg [31:0] count[0:19];
    integer i;

    genvar gi;
    generate
        for (gi = 0; gi < 20; gi = gi + 1) begin : g_out
            assign counters[32*gi+:32] = count[gi];
        end
    endgenerate

    always @(posedge clk) begin
        if (rst) begin
            for (i = 0; i < 20; i = i + 1) count[i] <= 32'd0;
        end else if (v_valid) begin
            count[16] <= count[16] + 1'b1;
            case (v_kind)
                2'd0: count[17] <= count[17] + 1'b1;
                2'd1: count[{1'b0, v_reason}] <= count[{1'b0, v_reason}] + 1'b1;
                2'd2: count[18] <= count[18] + 1'b1;
                default: count[19] <= count[19] + 1'b1;
            endcase
        end
    end
endmodule
`default_nettype wire
