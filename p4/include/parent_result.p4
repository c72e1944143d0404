// parent_result.p4 (both targets): what a child switch takes from its parent (protocol.md
// §7), the checks no register holds. Rust twin: p4/model/src/parent_result.rs
// (ParentResult). Applied once, before the run tracker, which drops a message whose
// session is not the parent run's first (BadSession) and then applies this finding
// (meta.parent_reject), as the reference checks in that order:
// - a Result must name this child's member index or 0xFFFF, a count the switch takes, a
//   version that is its use's parity and a slot of the job (Rejected: UnknownRank,
//   CountTooLarge, BadVersion, SlotRange); it then reads the slot version as a Probe does
//   (the ingress's read flag) and, at relay.p4, must find the use complete with the same count and not yet
//   relayed (Stale, CountMismatch, Duplicate: next_step_selector.p4, pass 0);
// - a JoinReply must name this child's member index or 0xFFFF and the parent's world
//   (UnknownRank); the run tracker then keeps the parent's session;
// - an Abort must name a member (below the parent's world) or 0xFFFF (UnknownRank); the
//   run tracker then ends the child's run in a second pass, and its ranks get Abort
//   ParentFailed (reply_builder.p4).
#ifndef _SWITCHML_PARENT_RESULT_P4_
#define _SWITCHML_PARENT_RESULT_P4_

control ParentResult(inout headers_t hdr, inout metadata_t meta) {
    apply {
        meta.parent_reject = DROP_NONE;
        bit<1> ours = (hdr.prefix.rank == meta.parent_member || hdr.prefix.rank == RANK_ALL)
            ? 1w1 : 1w0;
        if (meta.message == MSG_PARENT_ABORT) {
            if (hdr.prefix.rank == RANK_ALL) {
                // The parent's own (a restart's, or its run's end).
            } else if (hdr.prefix.rank >= meta.parent_members) {
                meta.parent_reject = DROP_UNKNOWN_RANK;
            }
        } else if (meta.message == MSG_JOIN_REPLY) {
            bit<1> world_ok = 0;
            if (hdr.join_reply.world == meta.parent_members) {
                world_ok = 1;
            }
            if (ours == 0 || world_ok == 0) {
                meta.parent_reject = DROP_UNKNOWN_RANK;
            }
        } else if (ours == 0) {
            meta.parent_reject = DROP_UNKNOWN_RANK;
        } else if (hdr.data.count > meta.max_count) {
            meta.parent_reject = DROP_COUNT_TOO_LARGE;
        } else if ((bit<32>)hdr.data.ver != (hdr.data.seq & 1)) {
            meta.parent_reject = DROP_BAD_VERSION;
        } else if (hdr.data.slot >= meta.slot_count) {
            meta.parent_reject = DROP_SLOT_RANGE;
        } else {
            meta.pool_slot = meta.slot_lo + (bit<32>)hdr.data.slot;
            meta.version_index = (meta.pool_slot << 1) | (bit<32>)hdr.data.ver[0:0];
            meta.p_seq = hdr.data.seq;
            meta.p_ver = hdr.data.ver;
        }
    }
}

#endif
