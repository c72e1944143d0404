// sml_job_counters: the per-job counters the data path owns, for the host's StatusReply
// (protocol.md §3.8), which adds its own (joins, aborts, runs, and the unauthorized
// Joins, Leaves and Aborts). Indexed like the job table; the host zeroes a job's counters
// when it (re)installs the job, as the reference switch starts a job's counters afresh.
//
// Counter c of job j: 0 contributions, 1 completions, 2 retransmit_replies, 3 duplicates,
// 4 stale, 5 rejected, 6 probes, 7 overflows, 8 unauthorized.
`default_nettype none
module sml_job_counters #(
    parameter integer JOBS = 4,
    parameter integer JW   = 2
) (
    input  wire          clk,
    input  wire          rst,
    // One event a data-path packet of a known job: 0 none, 1 contribution absorbed,
    // 2 contribution completing a use, 3 retransmission answered, 4 duplicate, 5 stale,
    // 6 rejected, 7 probe answered, 8 unauthorized.
    input  wire          ev_valid,
    input  wire [JW-1:0] ev_job,
    input  wire [3:0]    ev_class,
    // A completed use whose sum overflowed (from sml_aggregate).
    input  wire          ovf_valid,
    input  wire [JW-1:0] ovf_job,
    input  wire          reset_valid,
    input  wire [JW-1:0] reset_job,
    input  wire [JW-1:0] rd_job,
    input  wire [3:0]    rd_counter,
    output wire [31:0]   rd_data
);
    reg [31:0] count[0:9*JOBS-1];
    integer i;

    function automatic integer at(input [JW-1:0] job, input integer c);
        at = 9 * job + c;
    endfunction

    assign rd_data = (rd_counter < 4'd9) ? count[at(rd_job, {28'd0, rd_counter})] : 32'd0;

    always @(posedge clk) begin
        if (rst) begin
            for (i = 0; i < 9 * JOBS; i = i + 1) count[i] <= 32'd0;
        end else begin
            if (ev_valid) begin
                case (ev_class)
                    4'd1: count[at(ev_job, 0)] <= count[at(ev_job, 0)] + 1'b1;
                    4'd2: begin
                        count[at(ev_job, 0)] <= count[at(ev_job, 0)] + 1'b1;
                        count[at(ev_job, 1)] <= count[at(ev_job, 1)] + 1'b1;
                    end
                    4'd3: count[at(ev_job, 2)] <= count[at(ev_job, 2)] + 1'b1;
                    4'd4: count[at(ev_job, 3)] <= count[at(ev_job, 3)] + 1'b1;
                    4'd5: count[at(ev_job, 4)] <= count[at(ev_job, 4)] + 1'b1;
                    4'd6: count[at(ev_job, 5)] <= count[at(ev_job, 5)] + 1'b1;
                    4'd7: count[at(ev_job, 6)] <= count[at(ev_job, 6)] + 1'b1;
                    4'd8: count[at(ev_job, 8)] <= count[at(ev_job, 8)] + 1'b1;
                    default: ;
                endcase
            end
            if (ovf_valid) count[at(ovf_job, 7)] <= count[at(ovf_job, 7)] + 1'b1;
            if (reset_valid) begin
                for (i = 0; i < 9; i = i + 1) count[at(reset_job, i)] <= 32'd0;
            end
        end
    end
endmodule
`default_nettype wire
