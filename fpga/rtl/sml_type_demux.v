// sml_type_demux: the first stage after the input register slice. It reads the common
// prefix (protocol.md §2) in a packet's first beat and sends the whole packet either to the
// data path (Contribution, Probe, and everything the data path drops) or to the host port
// (Join, Abort, Status, Leave: the control plane, served by the host CPU; fpga/README.md).
//
// A packet goes to the host only if it is long enough to carry the prefix (6 bytes) and its
// version is 1: anything else is Malformed, which the data path drops and counts.
`default_nettype none
module sml_type_demux #(
    parameter integer W = 32  // bytes per beat
) (
    input  wire           clk,
    input  wire           rst,
    input  wire [8*W-1:0] s_tdata,
    input  wire [W-1:0]   s_tkeep,
    input  wire           s_tvalid,
    output wire           s_tready,
    input  wire           s_tlast,
    // Data path.
    output wire [8*W-1:0] d_tdata,
    output wire [W-1:0]   d_tkeep,
    output wire           d_tvalid,
    input  wire           d_tready,
    output wire           d_tlast,
    // Host (control plane).
    output wire [8*W-1:0] h_tdata,
    output wire [W-1:0]   h_tkeep,
    output wire           h_tvalid,
    input  wire           h_tready,
    output wire           h_tlast
);
    reg in_packet;  // a beat after the first of a packet
    reg route_host; // where the current packet goes

    wire [7:0] version = s_tdata[7:0];
    wire [7:0] msg_type = s_tdata[15:8];
    wire is_control = (msg_type == 8'h10) || (msg_type == 8'h14) ||
                      (msg_type == 8'h15) || (msg_type == 8'h17);
    // With W >= 32 a first beat that is not the last is full, so only a one-beat packet
    // can be shorter than the prefix; the prefix is 6 bytes, keep is contiguous from bit 0.
    wire long_enough = !s_tlast || s_tkeep[5];
    wire first_to_host = (version == 8'd1) && is_control && long_enough;
    wire to_host = in_packet ? route_host : first_to_host;

    assign d_tdata  = s_tdata;
    assign d_tkeep  = s_tkeep;
    assign d_tlast  = s_tlast;
    assign d_tvalid = s_tvalid && !to_host;
    assign h_tdata  = s_tdata;
    assign h_tkeep  = s_tkeep;
    assign h_tlast  = s_tlast;
    assign h_tvalid = s_tvalid && to_host;
    assign s_tready = to_host ? h_tready : d_tready;

    always @(posedge clk) begin
        if (rst) begin
            in_packet  <= 1'b0;
            route_host <= 1'b0;
        end else if (s_tvalid && s_tready) begin
            if (!in_packet) route_host <= first_to_host;
            in_packet <= !s_tlast;
        end
    end
endmodule
`default_nettype wire
