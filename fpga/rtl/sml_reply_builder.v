// sml_reply_builder: the headers of the data path's answers (combinational), as the decide
// stage's second stage sends them: a Result (§3.1; OVERFLOW and the non-finite kinds are
// added later by sml_aggregate), a ProbeReply with the Probe's session and the seen bitmap (§3.5: 28 + 8
// bytes at 64 ranks, so a header is 40 bytes wide) and a Probe's Abort refusal (§3.6).
// Byte 0 of a header is bits 7:0.
`default_nettype none
module sml_reply_builder #(
    parameter integer RANKS = 64   // at most 64: the bitmap ends by byte 35
) (
    input  wire [15:0]      job,
    input  wire [15:0]      rank,            // the packet's sender
    input  wire [15:0]      slot,
    input  wire [7:0]       ver,
    input  wire [31:0]      seq,
    input  wire [31:0]      session,
    input  wire [31:0]      epoch,
    input  wire [15:0]      world,
    // Result.
    input  wire             mcast,           // to every rank (else a unicast retransmission)
    input  wire [15:0]      count,
    input  wire [7:0]       exp,
    // ProbeReply: the use the slot version holds; idle: none of the Probe's session.
    input  wire             idle,
    input  wire [15:0]      held_remaining,
    input  wire [31:0]      held_seq,
    input  wire [RANKS-1:0] held_seen,
    // Abort.
    input  wire [7:0]       abort_reason,
    input  wire [15:0]      abort_detail,
    output wire [319:0]     result_hdr,
    output wire [319:0]     probe_hdr,
    output wire [5:0]       probe_len,
    output wire [319:0]     abort_hdr
);
    function automatic [319:0] put8(input [319:0] v, input integer at, input [7:0] x);
        begin
            put8 = v;
            put8[8*at+:8] = x;
        end
    endfunction
    function automatic [319:0] put16(input [319:0] v, input integer at, input [15:0] x);
        put16 = put8(put8(v, at, x[15:8]), at + 1, x[7:0]);
    endfunction
    function automatic [319:0] put32(input [319:0] v, input integer at, input [31:0] x);
        put32 = put16(put16(v, at, x[31:16]), at + 2, x[15:0]);
    endfunction
    function automatic [319:0] prefix(input [7:0] msg_type, input [15:0] to);
        prefix = put16(put16(put8(put8(320'd0, 0, 8'd1), 1, msg_type), 2, job), 4, to);
    endfunction

    // Result: rank 0xFFFF and no flags to all; the sender's rank and RETRANSMIT unicast.
    assign result_hdr = put32(put8(put32(put16(put8(put8(put16(
        prefix(8'h02, mcast ? 16'hFFFF : rank), 6, slot), 8, ver),
        9, mcast ? 8'h00 : 8'h02), 10, count), 12, seq), 16, exp), 20, session);

    // ProbeReply: state 0 idle, 1 collecting, 2 complete; an idle version reads as empty;
    // the Probe's session echoed, so that only its sender's run takes it (§4.2).
    wire [15:0] blen = (world + 16'd7) >> 3;
    wire [7:0]  state = idle ? 8'd0 : (held_remaining == 16'd0 ? 8'd2 : 8'd1);
    wire [319:0] probe_base = put32(put16(put16(put32(put32(put16(put8(put8(put16(
        prefix(8'h13, rank), 6, slot), 8, ver), 9, state),
        10, idle ? 16'd0 : held_remaining), 12, idle ? 32'd0 : held_seq), 16, epoch),
        20, world), 22, blen), 24, session);
    wire [319:0] seen_bytes = {{(320 - 224 - RANKS) {1'b0}},
                               idle ? {RANKS{1'b0}} : held_seen, 224'd0};
    assign probe_hdr = probe_base | seen_bytes;
    assign probe_len = 6'd28 + blen[5:0];

    // Abort: names the Probe's session, so that the worker takes it.
    assign abort_hdr = put32(put32(put16(put8(prefix(8'h14, rank), 6, abort_reason),
        8, abort_detail), 12, epoch), 16, session);
endmodule
`default_nettype wire
