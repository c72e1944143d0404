// join_handler.p4 (v1model): the checks of a Join, in the reference's order: the job,
// rank, world size, slot range (the lane lies in the job's slots, starts at a multiple
// of its length, and is one of the `lanes` the Join states), count. Rust twin:
// p4/model/src/join_handler.rs (JoinHandler). Stateless: a Join that passes goes on to
// run_tracker.p4, which opens or joins the run. It compares no key: the Join came back from
// the controller, which checked its tag and cookie (protocol.md §4.2) and refused a wrong
// one with Abort BadKey itself; a Join from any other port never reaches this control.
// p4c's BMv2 back end evaluates `%` and `/` only on compile-time constants (issue 31:
// "hdr.join.slot_lo % hdr.join.slot_count: could not evaluate expression at compilation
// time"), so, as on TNA, `slot_lo % slot_count == 0` is a hit in `lane_alignment`, which
// the control plane fills with every aligned pair (slot_count c, slot_lo k*c) of the pool,
// the entry's action data being the lane k = slot_lo / slot_count
// (p4/model/src/testbed.rs, `lane_alignments`). A pair that is not in the table is either
// not aligned or runs past the pool, and so past the job's slots: refused either way.
#ifndef _SWITCHML_JOIN_HANDLER_P4_
#define _SWITCHML_JOIN_HANDLER_P4_

control JoinHandler(inout headers_t hdr, inout metadata_t meta) {
    bit<1> aligned = 0;
    bit<16> lane = 0;

    action lane_aligned(bit<16> index) {
        aligned = 1;
        lane = index;
    }

    table lane_alignment {
        key = {
            hdr.join.slot_count : exact;
            hdr.join.slot_lo    : exact;
        }
        actions = { lane_aligned; NoAction; }
        default_action = NoAction();
        size = LANE_ALIGNMENTS;
    }

    apply {
        lane_alignment.apply();
        // A refusal of this Join, here or in run_tracker.p4 (LaneMismatch, ChunkMismatch,
        // LaneCountMismatch), names its nonce, so only the process that sent it takes it
        // (protocol.md §3.6).
        meta.abort_session = hdr.join.nonce;
        if (meta.job_hit == 0) {
            meta.abort_reason = ABORT_UNKNOWN_JOB;
            meta.abort_detail = 0;
        } else if (meta.rank_known == 0) {
            meta.abort_reason = ABORT_UNKNOWN_RANK;
            meta.abort_detail = meta.wire_world;
        } else if (hdr.join.world != meta.wire_world) {
            meta.abort_reason = ABORT_WORLD_MISMATCH;
            meta.abort_detail = meta.wire_world;
        } else if (hdr.join.slot_count == 0 || (bit<32>)hdr.join.slot_lo
                + (bit<32>)hdr.join.slot_count > (bit<32>)meta.slot_count || aligned == 0
                || lane >= hdr.join.lanes) {
            meta.abort_reason = ABORT_SLOT_RANGE;
            meta.abort_detail = meta.slot_count;
        } else if (hdr.join.count == 0 || hdr.join.count > meta.max_count) {
            meta.abort_reason = ABORT_COUNT_TOO_LARGE;
            meta.abort_detail = meta.max_count;
        }
    }
}

#endif
