// tier_selector.p4 (both targets): two-level aggregation (protocol.md §7), the tables.
// Rust twin: p4/model/src/tier_selector.rs (TierSelector). Applied once, before the
// classifier: a Result or JoinReply is for the child job its parent's job serves (table
// `child_job`: the parent's job id -> the child's job id, which job_table then looks up)
// or, with no such child, UnexpectedType before any other check of it; an Abort whose job
// is a child's parent's is the parent's (MSG_PARENT_ABORT), any other a worker's (the
// control plane keeps a parent's job id off every other job here, JobError::ParentIdTaken
// in the model and the reference); then `parent_link`
// gives the job's tier: flat (the default), a parent (a member's OVERFLOW is kept), or a
// child with its link: the whole job's world and first rank, the parent's job and world,
// this child's member index, and where the parent switch is (what goes up leaves there;
// a Join up by way of the controller, which holds the parent job's key and signs it). At
// a child the worker table's rank bit is the member's (rank - rank_lo, action
// data), so the registers hold members and every bitmap the child writes places them at
// rank_lo (bitmap_writer.p4).
#ifndef _SWITCHML_TIER_SELECTOR_P4_
#define _SWITCHML_TIER_SELECTOR_P4_

control TierSelector(inout headers_t hdr, inout metadata_t meta) {
    action set_child_job(bit<16> job) {
        meta.lookup_job = job;
    }

    table child_job {
        key = { hdr.prefix.job : exact; }
        actions = { set_child_job; NoAction; }
        default_action = NoAction();
        size = MAX_JOBS;
    }

    action set_flat() {
        meta.tier = TIER_FLAT;
    }

    action set_parent() {
        meta.tier = TIER_PARENT;
    }

    action set_child(bit<16> world, bit<16> rank_lo, bit<16> parent_job, bit<16> member,
                     bit<16> members, bit<48> mac, bit<32> ip,
                     bit<16> udp_port, bit<16> port) {
        meta.tier = TIER_CHILD;
        meta.wire_world = world;
        meta.rank_lo = rank_lo;
        meta.parent_job = parent_job;
        meta.parent_member = member;
        meta.parent_members = members;
        meta.parent_mac = mac;
        meta.parent_ip = ip;
        meta.parent_udp_port = udp_port;
        meta.parent_port = port;
    }

    table parent_link {
        key = { meta.lookup_job : exact; }
        actions = { set_flat; set_parent; set_child; }
        default_action = set_flat();
        size = MAX_JOBS;
    }

    apply {
        meta.lookup_job = hdr.prefix.job;
        if (meta.from_parent == 1 || meta.message == MSG_RESULT || meta.message == MSG_ABORT
                || meta.message == MSG_PARENT_ABORT) {
            if (child_job.apply().hit) {
                // An Abort of a child's parent's job is the parent's, not a worker's.
                if (meta.message == MSG_ABORT) {
                    meta.message = MSG_PARENT_ABORT;
                }
            } else if (meta.message != MSG_ABORT) {
                meta.drop_reason = DROP_UNEXPECTED_TYPE;
                meta.message = MSG_NONE;
            }
        }
        parent_link.apply();
    }
}

#endif
