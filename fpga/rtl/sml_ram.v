// sml_ram: a simple dual-port RAM, one synchronous read port (with enable, so that the
// read data holds while a stage stalls) and one write port: the shape FPGA block RAM has.
// Read-during-write of one address returns the old data; callers forward around it.
`default_nettype none
module sml_ram #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 16
) (
    input  wire                     clk,
    input  wire                     rd_en,
    input  wire [$clog2(DEPTH)-1:0] rd_addr,
    output reg  [WIDTH-1:0]         rd_data,
    input  wire                     wr_en,
    input  wire [$clog2(DEPTH)-1:0] wr_addr,
    input  wire [WIDTH-1:0]         wr_data
);
    reg [WIDTH-1:0] mem[0:DEPTH-1];

    always @(posedge clk) begin
        if (rd_en) rd_data <= mem[rd_addr];
        if (wr_en) mem[wr_addr] <= wr_data;
    end
endmodule
`default_nettype wire
