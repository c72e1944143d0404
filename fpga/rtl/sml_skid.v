// sml_skid: a full-throughput register slice (skid buffer) for one valid/ready channel.
//
// Both directions are registered: s_ready comes from a flop, never from m_ready through
// logic, so chaining stages never builds a combinational ready path across the design.
// Any payload (AXI-Stream tdata/tkeep/tlast/tuser packed into one bus) of WIDTH bits.
`default_nettype none
module sml_skid #(
    parameter integer WIDTH = 8
) (
    input  wire             clk,
    input  wire             rst,
    input  wire [WIDTH-1:0] s_data,
    input  wire             s_valid,
    output reg              s_ready,
    output reg  [WIDTH-1:0] m_data,
    output reg              m_valid,
    input  wire             m_ready
);
    reg [WIDTH-1:0] skid_data;
    reg             skid_valid;

    always @(posedge clk) begin
        if (rst) begin
            s_ready    <= 1'b1;
            m_valid    <= 1'b0;
            skid_valid <= 1'b0;
            m_data     <= {WIDTH{1'b0}};
            skid_data  <= {WIDTH{1'b0}};
        end else begin
            if (m_ready || !m_valid) begin
                // The output register is free this cycle: fill it from the skid, else input.
                if (skid_valid) begin
                    m_data     <= skid_data;
                    m_valid    <= 1'b1;
                    skid_valid <= 1'b0;
                    s_ready    <= 1'b1;
                end else begin
                    m_data  <= s_data;
                    m_valid <= s_valid && s_ready;
                end
            end else if (s_valid && s_ready) begin
                // Output stalled: park the beat accepted this cycle in the skid register.
                skid_data  <= s_data;
                skid_valid <= 1'b1;
                s_ready    <= 1'b0;
            end
        end
    end
endmodule
`default_nettype wire
