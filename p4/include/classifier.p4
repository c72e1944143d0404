// classifier.p4 (both targets): the job table and the worker table.
// Rust twin: p4/model/src/classifier.rs (Classifier). The worker table is keyed on the job
// and the source address and port (one entry per worker lane) and gives the rank, its member
// index and the member's seen-bitmap bit (at a child switch, protocol.md §7, member
// rank - rank_lo; else the rank); the job table, keyed on the job tier_selector.p4 chose
// (a Result's or JoinReply's child job), gives the world size, slot range and multicast
// group. Not the job's key: the controller keeps it and checks a Join's tag with it before
// the Join reaches the pipeline from the CPU port (protocol.md §4.2). Then the admission
// checks of a Contribution, in the reference switch's order; the session check between the job and the
// rank is the run tracker's, which overrides these (run_tracker.p4).
#ifndef _SWITCHML_CLASSIFIER_P4_
#define _SWITCHML_CLASSIFIER_P4_

control Classifier(inout headers_t hdr, inout metadata_t meta) {
    // `full` is the bitmap of ranks 0..world-1, which the control plane computes.
    action set_job(bit<16> world, bit<32> slot_lo, bit<16> slot_count, bit<16> group,
                   bit<16> job_index, bit<64> full) {
        meta.job_hit = 1;
        meta.world = world;
        meta.full_mask = full;
        meta.slot_lo = slot_lo;
        meta.slot_count = slot_count;
        meta.group = group;
        meta.job_index = job_index;
    }

    table job_table {
        key = { meta.lookup_job : exact; }
        actions = { set_job; NoAction; }
        default_action = NoAction();
        size = MAX_JOBS;
    }

    action set_worker(bit<16> rank, bit<16> member, bit<64> rank_bit) {
        meta.worker_hit = 1;
        meta.worker_rank = rank;
        meta.worker_member = member;
        meta.rank_bit = rank_bit;
    }

    table worker_table {
        key = {
            hdr.prefix.job   : exact;
            hdr.ipv4.src     : exact;
            hdr.udp.src_port : exact;
        }
        actions = { set_worker; NoAction; }
        default_action = NoAction();
        size = MAX_WORKERS;
    }

    apply {
        job_table.apply();
        worker_table.apply();
        if (meta.worker_hit == 1 && meta.worker_rank == hdr.prefix.rank) {
            meta.rank_known = 1;
        }
        if (meta.message == MSG_CONTRIBUTION) {
            if (meta.job_hit == 0) {
                meta.drop_reason = DROP_UNKNOWN_JOB;
            } else if (meta.rank_known == 0) {
                meta.drop_reason = DROP_UNKNOWN_RANK;
            } else if (hdr.data.count > meta.max_count) {
                meta.drop_reason = DROP_COUNT_TOO_LARGE;
            } else if ((bit<32>)hdr.data.ver != (hdr.data.seq & 1)) {
                meta.drop_reason = DROP_BAD_VERSION;
            } else if (hdr.data.slot >= meta.slot_count) {
                meta.drop_reason = DROP_SLOT_RANGE;
            } else {
                meta.pool_slot = meta.slot_lo + (bit<32>)hdr.data.slot;
                meta.version_index = (meta.pool_slot << 1) | (bit<32>)hdr.data.ver[0:0];
            }
        } else if (meta.message == MSG_PROBE && meta.job_hit == 1
                && hdr.probe.slot < meta.slot_count) {
            meta.pool_slot = meta.slot_lo + (bit<32>)hdr.probe.slot;
            meta.version_index = (meta.pool_slot << 1) | (bit<32>)hdr.probe.ver[0:0];
        }
    }
}

#endif
