// join_handler.p4 (v1model): the rendezvous; register `joined`, one 64-bit cell per job.
// Rust twin: p4/model/src/join_handler.rs (JoinHandler). Checks in the reference's order;
// the Join that fills the bitmap is answered by a multicast JoinReply with COMPLETE.
// With `status` set it is the read a Status needs (JoinHandler::status): the job's bitmap,
// unchanged.
#ifndef _SWITCHML_JOIN_HANDLER_P4_
#define _SWITCHML_JOIN_HANDLER_P4_

control JoinHandler(inout headers_t hdr, inout metadata_t meta, in bit<1> status) {
    register<bit<64>>(MAX_JOBS) joined;

    apply {
        if (status == 1) {
            // status_handler.p4 found the job.
            joined.read(meta.joined, (bit<32>)meta.job_index);
        } else if (meta.job_hit == 0) {
            meta.abort_reason = ABORT_UNKNOWN_JOB;
            meta.abort_detail = 0;
        } else if (meta.rank_known == 0) {
            meta.abort_reason = ABORT_UNKNOWN_RANK;
            meta.abort_detail = meta.world;
        } else if (hdr.join.world != meta.world) {
            meta.abort_reason = ABORT_WORLD_MISMATCH;
            meta.abort_detail = meta.world;
        } else if (hdr.join.slot_count == 0 || (bit<32>)hdr.join.slot_lo
                + (bit<32>)hdr.join.slot_count > (bit<32>)meta.slot_count) {
            meta.abort_reason = ABORT_SLOT_RANGE;
            meta.abort_detail = meta.slot_count;
        } else if (hdr.join.count > meta.max_count) {
            meta.abort_reason = ABORT_COUNT_TOO_LARGE;
            meta.abort_detail = meta.max_count;
        } else {
            bit<64> old;
            joined.read(old, (bit<32>)meta.job_index);
            meta.joined = old | meta.rank_bit;
            joined.write((bit<32>)meta.job_index, meta.joined);
            meta.join_complete = (meta.joined == meta.full_mask) ? 1w1 : 1w0;
            if ((old & meta.rank_bit) == 0 && meta.join_complete == 1) {
                meta.join_completes = 1;
            }
        }
    }
}

#endif
