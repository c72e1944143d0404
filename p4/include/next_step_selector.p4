// next_step_selector.p4 (both targets): the fate of a Contribution and its passes.
// Rust twin: p4/model/src/next_step_selector.rs (NextStepSelector). In the reference's
// order (protocol.md §4 steps 2-6): a complete use answers the sender with the stored
// result (RETRANSMIT), then duplicates and count mismatches drop, anything else is
// aggregated. One pass per block of VALUES_PER_PASS values to load, add or read.
#ifndef _SWITCHML_NEXT_STEP_SELECTOR_P4_
#define _SWITCHML_NEXT_STEP_SELECTOR_P4_

control NextStepSelector(inout headers_t hdr, inout metadata_t meta) {
    apply {
        if (meta.pass == 0) {
            if (meta.complete == 1) {
                meta.outcome = OUTCOME_RETRANSMIT;
                meta.update = UPDATE_READ;
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
            }
            // Blocks of the use's count, at least one pass.
            bit<16> blocks = (meta.held_count + (VALUES_PER_PASS - 1)) >> 6;
            meta.passes = (bit<8>)blocks;
            meta.last_value_pass = 0;
            if (meta.passes == 0) {
                meta.passes = 1;
            } else {
                meta.last_value_pass = meta.passes - 1;
            }
        }
        // Lanes of this pass's block that hold values of the use.
        bit<16> done = (bit<16>)meta.pass << 6;
        if (meta.held_count >= done + VALUES_PER_PASS) {
            meta.lanes = VALUES_PER_PASS;
        } else if (meta.held_count > done) {
            meta.lanes = (bit<8>)(meta.held_count - done);
        } else {
            meta.lanes = 0;
        }
        if (meta.drop_reason != DROP_NONE) {
            meta.verdict = VERDICT_DROP;
        } else if (meta.pass + 1 < meta.passes) {
            meta.verdict = VERDICT_RECIRCULATE;
        } else if (meta.outcome == OUTCOME_RETRANSMIT) {
            meta.verdict = VERDICT_UNICAST;
        } else if (meta.last == 1) {
            meta.verdict = VERDICT_MULTICAST;
        } else {
            meta.verdict = VERDICT_CONSUME;
        }
    }
}

#endif
