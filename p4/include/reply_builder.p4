// reply_builder.p4 (both targets): rewrite the packet into the switch's answer: Result,
// JoinReply, ProbeReply or Abort (a Leave is never answered; a Status is the controller's,
// protocol.md §4.2).
// Rust twin: p4/model/src/reply_builder.rs (ReplyBuilder). Bitmaps are the 64-bit register
// words, rank r at bit r mod 8 of byte r/8 (protocol.md §3.3), written by bitmap_writer.p4
// (at a child switch, §7, the members from rank_lo in a bitmap of the whole job's world).
// What a child sends up: a completed use (or a resend of it) as its Contribution to the
// parent's job, its Join as its Join there; what it sends down: a parent's Result as a
// Result of its own job and run, the parent's COMPLETE as its run's JoinReply COMPLETE.
#ifndef _SWITCHML_REPLY_BUILDER_P4_
#define _SWITCHML_REPLY_BUILDER_P4_

control ReplyBuilder(inout headers_t hdr, inout metadata_t meta) {
    apply {
        bit<16> bitmap_len = (meta.wire_world + 7) >> 3;
        if (meta.message == MSG_CONTRIBUTION && meta.up == 1) {
            // A child's use goes up: member parent_member of the parent's job and run.
            hdr.prefix.job = meta.parent_job;
            hdr.prefix.rank = meta.parent_member;
            hdr.data.flags = meta.result_flags;
            if (meta.outcome == OUTCOME_RETRANSMIT) {
                hdr.data.flags = hdr.data.flags | FLAG_RETRANSMIT;
            }
            hdr.data.count = meta.held_count;
            hdr.data.exp = meta.exp;
            hdr.data.reserved = 0;
            hdr.data.session = meta.parent_session;
            meta.reply_len = 24 + (meta.held_count << 2);
        } else if (meta.message == MSG_RESULT) {
            // The parent's Result, stored: down to the child's ranks, of the child's run.
            hdr.prefix.job = meta.lookup_job;
            hdr.prefix.rank = RANK_ALL;
            hdr.data.flags = meta.result_flags;
            hdr.data.count = meta.held_count;
            hdr.data.exp = meta.exp;
            hdr.data.reserved = 0;
            hdr.data.session = meta.run_session;
            meta.reply_len = 24 + (meta.held_count << 2);
        } else if (meta.message == MSG_CONTRIBUTION) {
            // The last pass rewrites the Contribution into a Result; the processors have
            // already put the use's values (held_count of them) in the value stacks.
            hdr.prefix.msg_type = TYPE_RESULT;
            hdr.data.flags = meta.result_flags;
            if (meta.outcome == OUTCOME_RETRANSMIT) {
                hdr.data.flags = hdr.data.flags | FLAG_RETRANSMIT;
            } else {
                hdr.prefix.rank = RANK_ALL;
            }
            hdr.data.count = meta.held_count;
            hdr.data.exp = meta.exp;
            hdr.data.reserved = 0;
            // The session stays: the Result echoes the Contribution's.
            meta.reply_len = 24 + (meta.held_count << 2);
        } else if (meta.abort_reason != 0) {
            // A refused Join or Probe: an Abort to the sender, naming the Join's nonce or the
            // Probe's session (join_handler.p4, probe_handler.p4). A
            // restart: an Abort to every rank of the run that ends, the restarted rank as
            // detail; a parent's Abort (§7): ParentFailed to every rank of the child's run,
            // the member it names as detail.
            hdr.join.setInvalid();
            hdr.join_auth.setInvalid();
            hdr.probe.setInvalid();
            hdr.abort.setValid();
            hdr.prefix.msg_type = TYPE_ABORT;
            if (meta.abort_reason == ABORT_RANK_RESTARTED) {
                hdr.prefix.rank = RANK_ALL;
            } else if (meta.abort_reason == ABORT_PARENT_FAILED) {
                // The parent's Abort, down to the child's ranks as the child's job's.
                hdr.prefix.job = meta.lookup_job;
                hdr.prefix.rank = RANK_ALL;
            }
            hdr.abort.reason = meta.abort_reason;
            hdr.abort.reserved_a = 0;
            hdr.abort.detail = meta.abort_detail;
            hdr.abort.reserved_b = 0;
            hdr.abort.epoch = meta.epoch;
            hdr.abort.session = meta.abort_session;
            meta.reply_len = 20;
        } else if (meta.message == MSG_JOIN && meta.up == 1) {
            // A child's Join to its parent: the worker's lane, the parent's job and world,
            // this child's member index, its run's session as nonce; cookie and tag zero, for
            // the controller, which holds the parent job's key and the parent's cookie, to
            // fill in before it sends the Join up (protocol.md §4.2, §7).
            hdr.prefix.job = meta.parent_job;
            hdr.prefix.rank = meta.parent_member;
            hdr.join.world = meta.parent_members;
            hdr.join.nonce = meta.run_session;
            hdr.join_auth.cookie = 0;
            hdr.join_auth.tag_hi = 0;
            hdr.join_auth.tag_lo = 0;
            meta.reply_len = 44;
        } else if (meta.message == MSG_JOIN_REPLY) {
            // The parent's COMPLETE: the child's run's, multicast to its ranks.
            hdr.prefix.job = meta.lookup_job;
            hdr.prefix.rank = RANK_ALL;
            hdr.join_reply.world = meta.wire_world;
            hdr.join_reply.flags = JOIN_COMPLETE;
            hdr.join_reply.reserved = 0;
            hdr.join_reply.max_count = meta.max_count;
            hdr.join_reply.epoch = meta.epoch;
            hdr.join_reply.slot_count = meta.slot_count;
            hdr.join_reply.bitmap_len = bitmap_len;
            hdr.join_reply.session = meta.run_session;
            hdr.join_reply.nonce = meta.run_session;
            hdr.join_reply.lane_slots = meta.run_lane_slots;
            hdr.join_reply.count = meta.run_count;
#ifdef SWITCHML_TIERS
            write_bitmap(hdr, meta.joined, meta.rank_lo, bitmap_len);
#else
            write_bitmap(hdr, meta.joined, bitmap_len);
#endif
            meta.reply_len = 32 + bitmap_len;
        } else if (meta.message == MSG_JOIN) {
            // Every answer to a Join names its nonce: only the process that sent it takes it.
            bit<32> nonce = hdr.join.nonce;
            bit<16> lane_slots = hdr.join.slot_count;
            bit<16> count = hdr.join.count;
            hdr.join.setInvalid();
            hdr.join_auth.setInvalid();
            hdr.join_reply.setValid();
            hdr.prefix.msg_type = TYPE_JOIN_REPLY;
            if (meta.join_completes == 1) {
                hdr.prefix.rank = RANK_ALL;
            }
            hdr.join_reply.world = meta.wire_world;
            hdr.join_reply.flags = (meta.join_complete == 1) ? JOIN_COMPLETE : 8w0;
            hdr.join_reply.reserved = 0;
            hdr.join_reply.max_count = meta.max_count;
            hdr.join_reply.epoch = meta.epoch;
            hdr.join_reply.slot_count = meta.slot_count;
            hdr.join_reply.bitmap_len = bitmap_len;
            hdr.join_reply.session = meta.run_session;
            hdr.join_reply.nonce = nonce;
            hdr.join_reply.lane_slots = lane_slots;
            hdr.join_reply.count = count;
#ifdef SWITCHML_TIERS
            write_bitmap(hdr, meta.joined, meta.rank_lo, bitmap_len);
#else
            write_bitmap(hdr, meta.joined, bitmap_len);
#endif
            meta.reply_len = 32 + bitmap_len;
        } else if (meta.message == MSG_PROBE) {
            hdr.probe_reply.setValid();
            hdr.prefix.msg_type = TYPE_PROBE_REPLY;
            hdr.probe_reply.slot = hdr.probe.slot;
            hdr.probe_reply.ver = hdr.probe.ver;
            // The Probe's session, echoed: a worker takes the reply, and the epoch in it,
            // only for its own run (protocol.md §3.5, §4.2 rule 3).
            hdr.probe_reply.session = hdr.probe.session;
            hdr.probe.setInvalid();
            // A version that holds no use of the probe's run reads as idle (ProbeHandler::
            // report in the model).
            if (meta.in_session == 0) {
                meta.remaining = 0;
                meta.held_seq = 0;
                meta.seen_word = 0;
                hdr.probe_reply.state = STATE_IDLE;
            } else if (meta.remaining == 0) {
                hdr.probe_reply.state = STATE_COMPLETE;
            } else {
                hdr.probe_reply.state = STATE_COLLECTING;
            }
            hdr.probe_reply.remaining = meta.remaining;
            hdr.probe_reply.seq = meta.held_seq;
            hdr.probe_reply.epoch = meta.epoch;
            hdr.probe_reply.world = meta.wire_world;
            hdr.probe_reply.bitmap_len = bitmap_len;
#ifdef SWITCHML_TIERS
            write_bitmap(hdr, meta.seen_word, meta.rank_lo, bitmap_len);
#else
            write_bitmap(hdr, meta.seen_word, bitmap_len);
#endif
            meta.reply_len = 28 + bitmap_len;
        } else if (meta.message == MSG_ABORT) {
            meta.reply_len = 20;                   // passed on unchanged
        }
    }
}

#endif
