// sml_replicate: result replication. A multicast answer (a completed use's Result) goes to
// every rank of its job: the first copy streams through to rank 0 while it is written
// into a packet buffer, and copies for ranks 1 .. world-1 are replayed from the buffer.
// A unicast answer streams through. Every copy keeps the bytes (a multicast Result says
// rank 0xFFFF, protocol.md §4); tuser names the copy's rank for the address lookup that
// follows (the lane addresses the control plane learns: fpga/README.md).
//
// At k values and n ranks a use brings n Contributions in and sends n Results out, so the
// replay keeps pace with the input when both streams run at the same width.
`default_nettype none
module sml_replicate #(
    parameter integer W     = 32,  // bytes a beat
    parameter integer DEPTH = 64   // beats the buffer holds: a largest Result, rounded up
) (
    input  wire           clk,
    input  wire           rst,
    input  wire [8*W-1:0] s_tdata,
    input  wire [W-1:0]   s_tkeep,
    input  wire           s_tvalid,
    output wire           s_tready,
    input  wire           s_tlast,
    input  wire [16:0]    s_tuser,  // {multicast, rank}
    input  wire [15:0]    s_world,  // ranks of the job (multicast)
    output wire [8*W-1:0] m_tdata,
    output wire [W-1:0]   m_tkeep,
    output wire           m_tvalid,
    input  wire           m_tready,
    output wire           m_tlast,
    output wire [17:0]    m_tuser   // {last copy, multicast, rank}
);
    localparam integer AW = $clog2(DEPTH);

    reg [8*W+W-1:0] buffer[0:DEPTH-1];  // {tkeep, tdata}
    reg             replay;             // replaying copies 1 .. world-1
    reg [AW-1:0]    beat;               // beat index within the packet
    reg [AW-1:0]    beats;              // beats of the buffered packet, minus one
    reg [15:0]      copy;               // the copy being sent
    reg [15:0]      world;

    wire mcast = s_tuser[16];
    wire [8*W+W-1:0] stored = buffer[beat];
    wire replay_last = (beat == beats);

    assign m_tdata  = replay ? stored[8*W-1:0] : s_tdata;
    assign m_tkeep  = replay ? stored[8*W+:W] : s_tkeep;
    assign m_tlast  = replay ? replay_last : s_tlast;
    assign m_tvalid = replay || s_tvalid;
    assign s_tready = !replay && m_tready;
    assign m_tuser  = replay ? {copy == world - 16'd1, 1'b1, copy}
                             : {!mcast || s_world <= 16'd1, mcast, mcast ? 16'd0 : s_tuser[15:0]};

    always @(posedge clk) begin
        if (rst) begin
            replay <= 1'b0;
            beat   <= {AW{1'b0}};
            beats  <= {AW{1'b0}};
            copy   <= 16'd0;
            world  <= 16'd0;
        end else if (!replay) begin
            if (s_tvalid && m_tready) begin
                buffer[beat] <= {s_tkeep, s_tdata};
                beat <= s_tlast ? {AW{1'b0}} : beat + 1'b1;
                if (s_tlast && mcast && s_world > 16'd1) begin
                    replay <= 1'b1;
                    beats  <= beat;
                    copy   <= 16'd1;
                    world  <= s_world;
                end
            end
        end else if (m_tready) begin
            beat <= replay_last ? {AW{1'b0}} : beat + 1'b1;
            if (replay_last) begin
                copy <= copy + 16'd1;
                if (copy == world - 16'd1) replay <= 1'b0;
            end
        end
    end
endmodule
`default_nettype wire
