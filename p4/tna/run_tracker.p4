// run_tracker.p4 (TNA): each job's current run (protocol.md §4.1), as p4/v1model/
// run_tracker.p4 in TNA idioms. Rust twin: p4/model/src/run_tracker.rs (RunTracker).
// Registers, in stage order: `session` (a pair: the run's session, 0 for none, and the runs
// the job opened), `shape` (a pair: {lane slots:16, count:16} and the runs again), `lanes`
// (the run's lanes per rank: the rest of its shape, for which the pair has no room), `nonce`
// (cell 64 x entry + rank), then the model's 64-bit `joined` and `left` as two 32-bit
// registers each (RunWord: ranks 0-31 and 32-63). One RegisterAction per register per
// pass; a restart or the last Leave decides at `joined`/`left` that the run ends, after
// `session`, so it recirculates and the next pass's `end_run` clears the session.
//
// A run's session is session_of(its opener's nonce, the runs before) (protocol.md §4.1).
// `open_run` writes it from the pair's own count, but a RegisterAction returns one word,
// here the session held (0: this Join opens the run); so `shape` counts the runs too, and
// `agree` returns the runs before an opening Join (whose shape is its own) or the agreed
// shape to any other: the opening Join computes its session there. Both counts start at 0
// when the job's entry is added, and a control-plane shutdown clears only the session.
//
// At a child switch (protocol.md §7), register `parent` (a pair: the parent run's session
// and whether the parent said COMPLETE), last in stage order, as p4/v1model/run_tracker.p4
// describes: reset with a run that opens or ends, read by a Join (complete) and a
// Contribution (session), checked by a parent's Result and a parent's Abort (session;
// `parent_session` lets an Abort naming the child's own run through while the parent has
// not said COMPLETE), and written by a parent's JoinReply (`take_parent`, which returns
// what became of it). `reset_parent` returns the session it forgets: a child whose run a
// worker's Abort or a restart ends owes that parent run an Abort (meta.up_reason), which
// leaves as an ingress mirror (switchml.p4). Only the tiered build (SWITCHML_TIERS,
// switchml.p4) has the register; in the flat build `parent_read` stays 0, every job is
// flat, and no parent's message gets here (the ingress drops it as UnexpectedType).
#ifndef _SWITCHML_RUN_TRACKER_P4_
#define _SWITCHML_RUN_TRACKER_P4_

const bit<2> WORD_READ = 0;        // return the word
const bit<2> WORD_JOIN_SET = 1;    // joined: reset if the run opened; return it; set `mask`
const bit<2> WORD_JOIN_CLEAR = 2;  // left: reset if the run opened; clear `mask`
const bit<2> WORD_LEAVE = 3;       // left: return it; set `mask`

// One 32-bit bitmap word of every job.
control RunWord(in bit<16> index, in bit<32> mask, in bit<2> mode, in bit<1> opened,
                out bit<32> word) {
    Register<bit<32>, bit<16>>(MAX_JOBS) bits;

    RegisterAction<bit<32>, bit<16>, bit<32>>(bits) read_word = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
        }
    };

    RegisterAction<bit<32>, bit<16>, bit<32>>(bits) join_set = {
        void apply(inout bit<32> value, out bit<32> rv) {
            if (opened == 1) {
                rv = 0;
                value = mask;
            } else {
                rv = value;
                value = value | mask;
            }
        }
    };

    RegisterAction<bit<32>, bit<16>, bit<32>>(bits) join_clear = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = 0;
            if (opened == 1) {
                value = 0;
            } else {
                value = value & ~mask;
            }
        }
    };

    RegisterAction<bit<32>, bit<16>, bit<32>>(bits) leave = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = value | mask;
        }
    };

    apply {
        if (mode == WORD_READ) {
            word = read_word.execute(index);
        } else if (mode == WORD_JOIN_SET) {
            word = join_set.execute(index);
        } else if (mode == WORD_JOIN_CLEAR) {
            word = join_clear.execute(index);
        } else {
            word = leave.execute(index) | mask;
        }
    }
}

struct run_cell_t {
    bit<32> session;
    bit<32> runs;
}

struct shape_cell_t {
    bit<32> shape;
    bit<32> runs;
}

struct parent_cell_t {
    bit<32> session;
    bit<32> complete;
}

// What a parent's JoinReply came to (`take_parent`).
const bit<32> PARENT_BAD_SESSION = 0;
const bit<32> PARENT_TAKEN = 1;
const bit<32> PARENT_COMPLETE = 2;
const bit<32> PARENT_REJECTED = 3;

control RunTracker(inout headers_t hdr, inout metadata_t meta) {
    Register<run_cell_t, bit<16>>(MAX_JOBS) session;
    Register<shape_cell_t, bit<16>>(MAX_JOBS) shape;
    Register<bit<16>, bit<16>>(MAX_JOBS) lanes;
    Register<bit<32>, bit<32>>(RUN_NONCES) nonce;
    RunWord() joined_lo;
    RunWord() joined_hi;
    RunWord() left_lo;
    RunWord() left_hi;
#ifdef SWITCHML_TIERS
    Register<parent_cell_t, bit<16>>(MAX_JOBS) parent;

    // A run ends: forget the parent's run; return its session (the Abort up names it).
    RegisterAction<parent_cell_t, bit<16>, bit<32>>(parent) reset_parent = {
        void apply(inout parent_cell_t value, out bit<32> rv) {
            rv = value.session;
            value.session = 0;
            value.complete = 0;
        }
    };

    // The parent run's session. An Abort of the parent's job that names the child's own
    // run (meta.abort_own_run) reads its own session instead while the parent has not
    // said COMPLETE: it is taken if what this returns is its session (a fourth action
    // would be one more than a stateful ALU holds).
    RegisterAction<parent_cell_t, bit<16>, bit<32>>(parent) parent_session = {
        void apply(inout parent_cell_t value, out bit<32> rv) {
            rv = value.session;
            if (value.complete == 0 && meta.abort_own_run == 1) {
                rv = meta.p_session;
            }
        }
    };

    // A Join: reset with a run that opens; return whether the parent's run is complete.
    RegisterAction<parent_cell_t, bit<16>, bit<32>>(parent) join_parent = {
        void apply(inout parent_cell_t value, out bit<32> rv) {
            if (meta.run_opened == 1) {
                value.session = 0;
                value.complete = 0;
            }
            rv = value.complete;
        }
    };

    // A parent's JoinReply naming the child's session as nonce (meta.admitted) or a
    // COMPLETE of the parent run taken: keep its session; its first COMPLETE, once every
    // rank joined (meta.join_complete), completes the child's run.
    RegisterAction<parent_cell_t, bit<16>, bit<32>>(parent) take_parent = {
        void apply(inout parent_cell_t value, out bit<32> rv) {
            rv = PARENT_BAD_SESSION;
            bit<1> complete = ((hdr.join_reply.flags & JOIN_COMPLETE) != 0) ? 1w1 : 1w0;
            if (hdr.join_reply.session != 0 && (meta.admitted == 1 || (complete == 1
                    && value.session != 0 && value.session == hdr.join_reply.session))) {
                if (meta.parent_reject != DROP_NONE) {
                    rv = PARENT_REJECTED;
                } else {
                    rv = PARENT_TAKEN;
                    value.session = hdr.join_reply.session;
                    if (complete == 1 && value.complete == 0 && meta.join_complete == 1) {
                        value.complete = 1;
                        rv = PARENT_COMPLETE;
                    }
                }
            }
        }
    };
#endif

    RegisterAction<run_cell_t, bit<16>, bit<32>>(session) read_session = {
        void apply(inout run_cell_t value, out bit<32> held) {
            held = value.session;
        }
    };

    // Open a run if there is none: session_of(nonce, runs), without a second add (a sum of
    // 0 is the runs equal to minus the nonce), and count it.
    RegisterAction<run_cell_t, bit<16>, bit<32>>(session) open_run = {
        void apply(inout run_cell_t value, out bit<32> held) {
            held = value.session;
            if (value.session == 0) {
                if (value.runs == meta.join_neg_nonce) {
                    value.session = 1;
                } else {
                    value.session = hdr.join.nonce + value.runs;
                }
                value.runs = value.runs + 1;
            }
        }
    };

    // A worker's Abort of a known rank ends its run.
    RegisterAction<run_cell_t, bit<16>, bit<32>>(session) abort_run = {
        void apply(inout run_cell_t value, out bit<32> held) {
            held = value.session;
            if (value.session == meta.p_session && meta.rank_known == 1) {
                value.session = 0;
            }
        }
    };

    RegisterAction<run_cell_t, bit<16>, bit<32>>(session) end_run = {
        void apply(inout run_cell_t value, out bit<32> held) {
            held = value.session;
            if (value.session == meta.run_session) {
                value.session = 0;
            }
        }
    };

    // The opening Join writes its shape and counts the run, and learns the runs before it;
    // any other Join learns the agreed shape.
    RegisterAction<shape_cell_t, bit<16>, bit<32>>(shape) agree = {
        void apply(inout shape_cell_t value, out bit<32> read) {
            if (meta.run_opened == 1) {
                read = value.runs;
                value.shape = meta.join_shape;
                value.runs = value.runs + 1;
            } else {
                read = value.shape;
            }
        }
    };

    // The opening Join writes its number of lanes; any other Join learns the agreed one.
    RegisterAction<bit<16>, bit<16>, bit<16>>(lanes) agree_lanes = {
        void apply(inout bit<16> value, out bit<16> read) {
            if (meta.run_opened == 1) {
                value = hdr.join.lanes;
            }
            read = value;
        }
    };

    RegisterAction<bit<32>, bit<32>, bit<32>>(nonce) swap_nonce = {
        void apply(inout bit<32> value, out bit<32> old) {
            old = value;
            if (meta.shape_ok == 1) {
                value = hdr.join.nonce;
            }
        }
    };

    apply {
        bit<16> j = meta.job_index;
        bit<32> held = 0;
        bit<32> agreed = 0;
        bit<16> agreed_lanes = 0;
        bit<32> old_nonce = 0;
        bit<32> lo = 0;
        bit<32> hi = 0;
        bit<32> left_lo_word = 0;
        bit<32> left_hi_word = 0;
        // The bitmap words are applied from one place below, after the session; each
        // message picks what they do.
        bit<1> joined_on = 0;
        bit<1> left_on = 0;
        bit<2> joined_mode = WORD_READ;
        bit<2> left_mode = WORD_READ;
        bit<64> mask = 0;
        // `parent`, last: what each message does to it, and its answer.
        bit<2> parent_mode = 0;                // 0: none, 1: reset, 2: read, 3: join
        if (meta.pass != 0) {
            held = end_run.execute(j);
            if (held == meta.run_session) {
                parent_mode = 1;
            }
            if (meta.message == MSG_JOIN) {
                meta.abort_reason = ABORT_RANK_RESTARTED;
                meta.abort_detail = hdr.prefix.rank;
                meta.abort_session = meta.run_session;
            } else if (meta.message == MSG_PARENT_ABORT) {
                // Its ranks hear ParentFailed, naming the member the parent's Abort names:
                // its sender, or for a restart from 0xFFFF its detail, else none.
                meta.abort_reason = ABORT_PARENT_FAILED;
                meta.abort_detail = hdr.prefix.rank;
                if (hdr.prefix.rank == RANK_ALL) {
                    meta.abort_detail = ABORT_NAMES_NONE;
                    if (hdr.abort.reason == ABORT_RANK_RESTARTED
                            && hdr.abort.detail < meta.parent_members) {
                        meta.abort_detail = hdr.abort.detail;
                    }
                }
                meta.abort_session = meta.run_session;
            }
        } else if (meta.message == MSG_PARENT_ABORT) {
            held = read_session.execute(j);
            meta.abort_own_run = (held != 0 && held == meta.p_session) ? 1w1 : 1w0;
            parent_mode = 2;
        } else if (meta.message == MSG_STATUS) {
            held = read_session.execute(j);
            meta.run_open = (held != 0) ? 1w1 : 1w0;
            joined_on = 1;
        } else if (meta.message == MSG_JOIN) {
            meta.join_neg_nonce = 0 - hdr.join.nonce;
            held = open_run.execute(j);
            meta.run_opened = (held == 0) ? 1w1 : 1w0;
            meta.run_session = held;
            meta.join_shape = hdr.join.slot_count ++ hdr.join.count;
            agreed = agree.execute(j);
            if (meta.run_opened == 1) {
                // `agree` returned the runs before this one.
                meta.run_session = session_of(hdr.join.nonce, agreed);
                agreed = meta.join_shape;
            }
            agreed_lanes = agree_lanes.execute(j);
            meta.shape_ok = (agreed == meta.join_shape && agreed_lanes == hdr.join.lanes)
                ? 1w1 : 1w0;
            // Only a Join of the run's shape changes the run.
            if (meta.shape_ok == 1) {
                mask = meta.rank_bit;
            }
            old_nonce = swap_nonce.execute(((bit<32>)j << 6) + (bit<32>)meta.worker_member);
            joined_on = 1;
            left_on = 1;
            joined_mode = WORD_JOIN_SET;
            left_mode = WORD_JOIN_CLEAR;
            parent_mode = 3;
        } else if (meta.message == MSG_RESULT || meta.message == MSG_JOIN_REPLY) {
            held = read_session.execute(j);
            meta.run_session = held;
            if (meta.message == MSG_JOIN_REPLY) {
                meta.admitted = (held != 0 && hdr.join_reply.nonce == held) ? 1w1 : 1w0;
                agreed = agree.execute(j);
                meta.run_lane_slots = agreed[31:16];
                meta.run_count = agreed[15:0];
                joined_on = 1;
            } else {
                parent_mode = 2;
            }
        } else {
            if (meta.message == MSG_ABORT) {
                held = abort_run.execute(j);
            } else {
                held = read_session.execute(j);
            }
            meta.admitted = (held != 0 && held == meta.p_session) ? 1w1 : 1w0;
            if (meta.message == MSG_ABORT && meta.admitted == 1 && meta.rank_known == 1) {
                parent_mode = 1;
            } else if (meta.message == MSG_CONTRIBUTION) {
                parent_mode = 2;
            }
            if (meta.admitted == 0) {
                if (meta.message != MSG_PROBE) {
                    meta.drop_reason = DROP_BAD_SESSION;
                }
            } else if (meta.message == MSG_ABORT || meta.message == MSG_LEAVE) {
                if (meta.rank_known == 0) {
                    meta.drop_reason = DROP_UNKNOWN_RANK;
                } else if (meta.message == MSG_LEAVE) {
                    // Only a rank of the run can leave it.
                    joined_on = 1;
                    left_on = 1;
                    left_mode = WORD_LEAVE;
                }
            }
        }

        if (joined_on == 1) {
            joined_lo.apply(j, mask[31:0], joined_mode, meta.run_opened, lo);
            joined_hi.apply(j, mask[63:32], joined_mode, meta.run_opened, hi);
        }
        if (left_mode == WORD_LEAVE) {
            mask = (hi ++ lo) & meta.rank_bit;
        }
        if (left_on == 1) {
            left_lo.apply(j, mask[31:0], left_mode, meta.run_opened, left_lo_word);
            left_hi.apply(j, mask[63:32], left_mode, meta.run_opened, left_hi_word);
        }

        bit<32> parent_read = 0;
#ifdef SWITCHML_TIERS
        if (meta.message == MSG_JOIN_REPLY && meta.pass == 0) {
            meta.joined = hi ++ lo;
            meta.join_complete = (meta.joined == meta.full_mask) ? 1w1 : 1w0;
            parent_read = take_parent.execute(j);
        } else if (parent_mode == 1) {
            parent_read = reset_parent.execute(j);
        } else if (parent_mode == 2) {
            parent_read = parent_session.execute(j);
        } else if (parent_mode == 3) {
            parent_read = join_parent.execute(j);
        }
        // A child's run that a worker's Abort or a restart ends ends the whole job's: it
        // owes its parent an Abort (§7), sent as a mirror (switchml.p4).
        if (parent_mode == 1 && meta.tier == TIER_CHILD && parent_read != 0) {
            if (meta.message == MSG_JOIN) {
                meta.up_reason = ABORT_RANK_RESTARTED;
                meta.up_session = parent_read;
            } else if (meta.message == MSG_ABORT) {
                meta.up_reason = ABORT_WORKER_FAILED;
                meta.up_session = parent_read;
            }
        }
#endif

        if (meta.pass != 0) {
            // The run ended above.
        } else if (meta.message == MSG_PARENT_ABORT) {
            // Of the parent run taken, or (parent_session) of the child's own run.
            if (parent_read == 0 || parent_read != meta.p_session) {
                // The child's own Abort, passed back by the parent, is expected.
                meta.drop_reason = (hdr.prefix.rank == meta.parent_member)
                    ? DROP_DUPLICATE : DROP_BAD_SESSION;
            } else if (meta.parent_reject != DROP_NONE) {
                meta.drop_reason = meta.parent_reject;
            } else {
                meta.run_end = 1;
                meta.run_session = held;
            }
        } else if (meta.message == MSG_RESULT) {
            if (parent_read == 0 || parent_read != meta.p_session) {
                meta.drop_reason = DROP_BAD_SESSION;
            } else if (meta.parent_reject != DROP_NONE) {
                meta.drop_reason = meta.parent_reject;
            } else {
                meta.parent_session = parent_read;
                meta.p_session = held;
            }
        } else if (meta.message == MSG_JOIN_REPLY) {
            meta.join_complete = 0;
            if (parent_read == PARENT_BAD_SESSION) {
                meta.drop_reason = DROP_BAD_SESSION;
            } else if (parent_read == PARENT_REJECTED) {
                meta.drop_reason = meta.parent_reject;
            } else if (parent_read == PARENT_COMPLETE) {
                meta.join_complete = 1;
                meta.join_completes = 1;
            }
        } else if (meta.message == MSG_CONTRIBUTION) {
            meta.parent_session = parent_read;
        } else if (meta.message == MSG_STATUS) {
            meta.joined = (held == 0) ? 64w0 : hi ++ lo;
        } else if (meta.message == MSG_JOIN) {
            bit<64> old = hi ++ lo;
            bit<1> was_complete = (old == meta.full_mask) ? 1w1 : 1w0;
            if ((old & meta.rank_bit) != 0 && old_nonce != hdr.join.nonce
                    && was_complete == 1) {
                meta.run_end = 1;
            } else if (agreed[31:16] != hdr.join.slot_count) {
                meta.abort_reason = ABORT_LANE_MISMATCH;
                meta.abort_detail = agreed[31:16];
            } else if (agreed[15:0] != hdr.join.count) {
                meta.abort_reason = ABORT_CHUNK_MISMATCH;
                meta.abort_detail = agreed[15:0];
            } else if (agreed_lanes != hdr.join.lanes) {
                meta.abort_reason = ABORT_LANE_COUNT_MISMATCH;
                meta.abort_detail = agreed_lanes;
            } else if (meta.tier == TIER_CHILD && was_complete == 1 && parent_read == 0) {
                // A child's run is complete when its parent's is: this Join goes up.
                meta.up = 1;
            } else {
                meta.joined = old | meta.rank_bit;
                meta.join_complete = (meta.joined == meta.full_mask) ? 1w1 : 1w0;
                if (meta.tier == TIER_CHILD) {
                    // The parent's COMPLETE tells the child's ranks, not this Join.
                    meta.join_complete = meta.join_complete & parent_read[0:0];
                } else if (meta.join_complete == 1 && was_complete == 0) {
                    meta.join_completes = 1;
                }
            }
        } else if (left_mode == WORD_LEAVE) {
            if (left_lo_word == lo && left_hi_word == hi) {
                meta.run_end = 1;
                meta.run_session = held;
            }
        }
    }
}

#endif
