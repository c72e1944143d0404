// next_step_selector.p4 (both targets): the fate of a Contribution and its passes.
// Rust twin: p4/model/src/next_step_selector.rs (NextStepSelector). In the reference's
// order (protocol.md §4 steps 2-6): a complete use answers the sender with the stored
// result (RETRANSMIT), then duplicates and count mismatches drop, anything else is
// aggregated. The passes, as the original SwitchML's consume and harvest passes: pass
// b < blocks loads, adds or reads block b, the block at the front of the packet's values,
// and drops it from the packet unless it is the last (so block b + 1 is at the front of
// the next pass); a packet that answers then reads blocks blocks-2 .. 0 back, each put in
// front of those already in the packet. Only one block is ever in the header vector.
// Two levels (protocol.md §7): at a child (meta.tier) a completed use goes up, not down,
// and so does one resend in n of it while the parent's Result is not here (relay.p4's
// meta.ask; the other resends are consumed in one pass); a parent keeps a member's
// OVERFLOW; and a parent's Result at a child (MSG_RESULT), once its checks passed and the
// version holds its use complete with its count and not relayed, is stored (loaded as a
// first contribution is, its exponent and flag with it) and multicast down (OUTCOME_STORE).
// An answer that goes up leaves only if the child holds its parent run's session
// (meta.parent_session); before that, nothing is sent.
#ifndef _SWITCHML_NEXT_STEP_SELECTOR_P4_
#define _SWITCHML_NEXT_STEP_SELECTOR_P4_

// The values of block `b` of a use of `count` values.
bit<8> lanes_of(in bit<16> count, in bit<8> b) {
    bit<16> done = (bit<16>)b << VALUE_SHIFT;
    bit<8> lanes = 0;
    if (count >= done + VALUES_PER_PASS) {
        lanes = VALUES_PER_PASS;
    } else if (count > done) {
        lanes = (bit<8>)(count - done);
    }
    return lanes;
}

control NextStepSelector(inout headers_t hdr, inout metadata_t meta) {
    apply {
        bit<1> answers = 0;
        if (meta.outcome == OUTCOME_RETRANSMIT || meta.last == 1) {
            answers = 1;
        }
        bit<1> waits = 0;
        // The packet's own flags that reach the Result: every Contribution's non-finite
        // kinds and congestion mark (protocol.md §5.4, §6.3); at a parent, and from a
        // parent's Result, OVERFLOW too.
        bit<8> kinds = hdr.data.flags & FLAG_CARRIED;
        bit<8> sticky = hdr.data.flags & FLAG_STICKY;
        if (meta.pass == 0) {
            meta.up = 0;
            if (meta.message == MSG_RESULT) {
                // Whether the version holds this run's use of the Result's number, complete:
                // a flag, a comparison at a time (no `!=` inside a longer gateway condition
                // on Tofino).
                bit<1> holds_use = 0;
                if (meta.held_seq == meta.p_seq) {
                    holds_use = 1;
                }
                if (meta.in_session == 0) {
                    holds_use = 0;
                }
                if (meta.remaining != 0) {
                    holds_use = 0;
                }
                if (holds_use == 0) {
                    meta.drop_reason = DROP_STALE;
                } else if (meta.held_count != hdr.data.count) {
                    meta.drop_reason = DROP_COUNT_MISMATCH;
                } else if (meta.relayed == 1) {
                    meta.drop_reason = DROP_DUPLICATE;
                } else {
                    meta.outcome = OUTCOME_STORE;
                    meta.update = UPDATE_LOAD;
                    meta.packet_flags = sticky;
                    answers = 1;
                }
            } else if (meta.complete == 1 && meta.count_ok == 1) {
                meta.outcome = OUTCOME_RETRANSMIT;
                meta.update = UPDATE_READ;
                answers = 1;
                if (meta.tier == TIER_CHILD && meta.relayed == 0) {
                    meta.up = meta.ask;
                    if (meta.ask == 0) {
                        meta.update = UPDATE_NONE;
                        answers = 0;
                        waits = 1;
                    }
                }
            } else if (meta.complete == 1) {
                // Another count than the use's is no resend: not answered (§4 step 2).
                meta.outcome = OUTCOME_COUNT_MISMATCH;
                meta.drop_reason = DROP_COUNT_MISMATCH;
            } else if (meta.seen == 1) {
                meta.outcome = OUTCOME_DUPLICATE;
                meta.drop_reason = DROP_DUPLICATE;
            } else if (meta.counted == 0) {
                meta.outcome = OUTCOME_COUNT_MISMATCH;
                meta.drop_reason = DROP_COUNT_MISMATCH;
            } else {
                meta.outcome = OUTCOME_AGGREGATE;
                meta.update = (meta.begin == 1) ? UPDATE_LOAD : UPDATE_ADD;
                meta.last = (meta.remaining == 0) ? 1w1 : 1w0;
                answers = meta.last;
                meta.packet_flags = kinds;
                if (meta.tier == TIER_PARENT) {
                    meta.packet_flags = sticky;
                }
                if (meta.tier == TIER_CHILD) {
                    meta.up = meta.last;
                }
            }
            // Blocks of the use's count; one pass each, and one per block but the last
            // to harvest when the packet answers; at least one pass.
            meta.blocks = (bit<8>)((meta.held_count + (VALUES_PER_PASS - 1)) >> VALUE_SHIFT);
            meta.last_value_pass = 0;
            meta.passes = 1;
            if (meta.blocks != 0) {
                meta.last_value_pass = meta.blocks - 1;
                meta.passes = meta.blocks;
                if (answers == 1) {
                    meta.passes = meta.blocks + meta.blocks - 1;
                }
            }
            if (waits == 1) {
                meta.passes = 1;
            }
        }
        // This pass's block: block `pass` while consuming, then the earlier ones backwards.
        // (A use of no values has no block: no lanes.)
        meta.block = meta.pass;
        meta.harvest = 0;
        if (meta.pass >= meta.blocks) {
            meta.block = meta.blocks + meta.blocks - 2 - meta.pass;
            meta.harvest = 1;
        }
        meta.lanes = 0;
        if (meta.blocks != 0) {
            meta.lanes = lanes_of(meta.held_count, meta.block);
        }
        // The block stays in the packet in the passes that build the answer.
        meta.keep_values = 0;
        if (answers == 1 && meta.pass + 1 >= meta.blocks) {
            meta.keep_values = 1;
        }
        // What the next pass's parser extracts: the next block while consuming.
        meta.parse_lanes = 0;
        if (meta.pass + 1 < meta.blocks) {
            meta.parse_lanes = lanes_of(meta.held_count, meta.pass + 1);
        }
        if (meta.drop_reason != DROP_NONE) {
            meta.verdict = VERDICT_DROP;
        } else if (meta.pass + 1 < meta.passes) {
            meta.verdict = VERDICT_RECIRCULATE;
        } else if (meta.up == 1) {
            meta.verdict = (meta.parent_session != 0) ? VERDICT_UP : VERDICT_CONSUME;
        } else if (meta.outcome == OUTCOME_RETRANSMIT && meta.update == UPDATE_NONE) {
            meta.verdict = VERDICT_CONSUME;         // a child's resend that waits
        } else if (meta.outcome == OUTCOME_RETRANSMIT) {
            meta.verdict = VERDICT_UNICAST;
        } else if (meta.last == 1 || meta.outcome == OUTCOME_STORE) {
            meta.verdict = VERDICT_MULTICAST;
        } else {
            meta.verdict = VERDICT_CONSUME;
        }
    }
}

#endif
