// sml_fifo: a synchronous first-word-fall-through FIFO of DEPTH (a power of two) entries.
//
// Used between stages: rx payload words, packet metadata, aggregation ops, result words.
`default_nettype none
module sml_fifo #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 4
) (
    input  wire             clk,
    input  wire             rst,
    input  wire [WIDTH-1:0] s_data,
    input  wire             s_valid,
    output wire             s_ready,
    output wire [WIDTH-1:0] m_data,
    output wire             m_valid,
    input  wire             m_ready
);
    localparam integer AW = (DEPTH > 1) ? $clog2(DEPTH) : 1;

    reg [WIDTH-1:0] mem[0:DEPTH-1];
    reg [AW:0]      wptr;
    reg [AW:0]      rptr;

    wire empty = (wptr == rptr);
    wire full  = (wptr[AW-1:0] == rptr[AW-1:0]) && (wptr[AW] != rptr[AW]);

    assign s_ready = !full;
    assign m_valid = !empty;
    assign m_data  = mem[rptr[AW-1:0]];

    always @(posedge clk) begin
        if (rst) begin
            wptr <= {(AW + 1) {1'b0}};
            rptr <= {(AW + 1) {1'b0}};
        end else begin
            if (s_valid && !full) begin
                mem[wptr[AW-1:0]] <= s_data;
                wptr <= wptr + 1'b1;
            end
            if (m_ready && !empty) rptr <= rptr + 1'b1;
        end
    end
endmodule
`default_nettype wire
