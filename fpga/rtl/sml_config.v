// sml_config: the register interface the host CPU (the control plane) writes: the epoch,
// the largest count accepted, the job table, and a command that returns a slot range to
// idle (what `Switch::add_job` does to a job's slots). Reads return the drop counters.
//
// Register map (32-bit words, word addresses):
//   0x00 epoch                     0x01 max_count (<= K_MAX)
//   0x02 clear: first pool slot    0x03 clear: slot count; writing starts the clear
//   0x04 (read) bit 0: a clear is running
//   0x10 + 4·j + 0  job j: bit 31 valid, bits 15:0 job id
//   0x10 + 4·j + 1  job j: bits 31:16 world size, bits 15:0 slot count
//   0x10 + 4·j + 2  job j: first pool slot
//   0x10 + 4·j + 3  job j: session of the current run (0: no run)
//   0x05 (write) zero job j's counters (j in bits JW-1:0)
//   0x80 + r        (read) counter r (sml_counters)
//   0x100 + 16·j + c  (read) counter c of job j (sml_job_counters)
// The host writes a job's entry only while no packet of that job is in flight (it
// quiesces the data path first; fpga/README.md).
`default_nettype none
module sml_config #(
    parameter integer JOBS  = 4,
    parameter integer SIW   = 4,  // pool slot index width
    parameter integer NCNT  = 20, // counters readable
    parameter integer JW    = 2
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 wr_en,
    input  wire [7:0]           wr_addr,
    input  wire [31:0]          wr_data,
    input  wire [9:0]           rd_addr,
    output reg  [31:0]          rd_data,
    output reg  [31:0]          epoch,
    output reg  [15:0]          max_count,
    output reg  [JOBS-1:0]      job_valid,
    output reg  [16*JOBS-1:0]   job_id,
    output reg  [16*JOBS-1:0]   job_world,
    output reg  [16*JOBS-1:0]   job_slot_count,
    output reg  [SIW*JOBS-1:0]  job_slot_lo,
    output reg  [32*JOBS-1:0]   job_session,
    output reg                  clear_start,
    output reg  [SIW-1:0]       clear_lo,
    output reg  [15:0]          clear_count,
    input  wire                 clear_busy,
    input  wire [32*NCNT-1:0]   counters,
    output reg                  jc_reset,
    output reg  [JW-1:0]        jc_reset_job,
    input  wire [31:0]          jc_data      // job counter at rd_addr (combinational)
);
    integer j;

    always @(posedge clk) begin
        if (rst) begin
            epoch          <= 32'd0;
            max_count      <= 16'd0;
            job_valid      <= {JOBS{1'b0}};
            job_id         <= {16 * JOBS{1'b0}};
            job_world      <= {16 * JOBS{1'b0}};
            job_slot_count <= {16 * JOBS{1'b0}};
            job_slot_lo    <= {SIW * JOBS{1'b0}};
            job_session    <= {32 * JOBS{1'b0}};
            clear_start    <= 1'b0;
            clear_lo       <= {SIW{1'b0}};
            clear_count    <= 16'd0;
            jc_reset       <= 1'b0;
            jc_reset_job   <= {JW{1'b0}};
        end else begin
            clear_start <= 1'b0;
            jc_reset    <= 1'b0;
            if (wr_en) begin
                case (wr_addr)
                    8'h00: epoch <= wr_data;
                    8'h01: max_count <= wr_data[15:0];
                    8'h02: clear_lo <= wr_data[SIW-1:0];
                    8'h03: begin
                        clear_count <= wr_data[15:0];
                        clear_start <= 1'b1;
                    end
                    8'h05: begin
                        jc_reset     <= 1'b1;
                        jc_reset_job <= wr_data[JW-1:0];
                    end
                    default: ;
                endcase
                for (j = 0; j < JOBS; j = j + 1) begin
                    if ({24'd0, wr_addr} == 32'h10 + 32'(4 * j)) begin
                        job_valid[j]     <= wr_data[31];
                        job_id[16*j+:16] <= wr_data[15:0];
                    end
                    if ({24'd0, wr_addr} == 32'h11 + 32'(4 * j)) begin
                        job_world[16*j+:16]      <= wr_data[31:16];
                        job_slot_count[16*j+:16] <= wr_data[15:0];
                    end
                    if ({24'd0, wr_addr} == 32'h12 + 32'(4 * j)) job_slot_lo[SIW*j+:SIW] <= wr_data[SIW-1:0];
                    if ({24'd0, wr_addr} == 32'h13 + 32'(4 * j)) job_session[32*j+:32] <= wr_data;
                end
            end
        end
    end

    always @(posedge clk) begin
        if (rd_addr == 10'h004) rd_data <= {31'd0, clear_busy || clear_start};
        else if (rd_addr[9:8] == 2'b01) rd_data <= jc_data;
        else if (rd_addr >= 10'h080 && {22'd0, rd_addr} < 32'h80 + NCNT)
            rd_data <= counters[32*{25'd0, rd_addr[6:0]}+:32];
        else rd_data <= 32'd0;
    end
endmodule
`default_nettype wire
