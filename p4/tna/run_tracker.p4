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
// At a child switch (protocol.md §7), registers `parent` (the parent run's session) and
// `parent_complete` (whether the parent said COMPLETE), last in stage order, as
// p4/v1model/run_tracker.p4 describes its one `parent` pair: reset with a run that opens or
// ends, read by a Join (complete) and a Contribution (session), checked by a parent's
// Result and a parent's Abort (session; an Abort naming the child's own run is let through
// while the parent has not said COMPLETE), and written by a parent's JoinReply
// (`take_parent`, then `mark_complete`). Two registers, not a pair: a parent's JoinReply
// decides on both words, more than the two comparisons of one Tofino 1 stateful ALU, so the
// session is taken first and the COMPLETE marked a stage later. `reset_parent` returns the
// session it forgets: a child whose run a worker's Abort or a restart ends owes that parent
// run an Abort (meta.up_reason), which leaves as an ingress mirror (switchml.p4). A third,
// `parent_echo` (the reference's `Run::echo`), keeps that session after the run: wherever
// `parent` is forgotten (a run that ends, a Join that opens the next), `keep_echo` writes the
// session it held, if any (meta.echo_session, `parent`'s answer, so a stage later). The
// child's own Abort up comes back down from the parent in that session, a duplicate; a
// parent's Abort from this child's member in any other session is forged (`check_echo`):
// unauthorized, BadSession. Only the tiered build (SWITCHML_TIERS, switchml.p4) has the
// registers; in the flat build `parent_read` and `echo` stay 0, every job is flat, and no
// parent's message gets here (the ingress drops it as UnexpectedType).
//
// Liveness (protocol.md §4.3; Rust twin: p4/model/src/liveness.rs, Liveness): `heard`, the
// members heard since the controller's last sweep, two RunWords like `joined`. A Join
// sets its rank's bit with `joined`'s mask and mode (the opening Join writes its bit
// alone; a Join of another shape sets nothing); an admitted Contribution or Probe of a
// known rank sets it too (a Probe with a slot outside the job's as well, which the model
// counts only when answered: no conforming worker sends one). The controller reads and
// clears the words every dead_after / 4 and ends a run whose member stayed quiet 4 sweeps
// in a row. Two more registers of MAX_JOBS words beside `joined` and `left`: not yet in
// the stage arithmetic of p4/README.md.
//
// Every RegisterAction here compares at most twice, masks with no PHV field and has one
// output source (model/tests/tofino_rules.rs checks it), and reads only whole metadata or
// header fields: the joined/left masks travel in meta.run_mask_lo/hi.
#ifndef _SWITCHML_RUN_TRACKER_P4_
#define _SWITCHML_RUN_TRACKER_P4_

const bit<2> WORD_READ = 0;        // return the word
const bit<2> WORD_JOIN_SET = 1;    // joined: reset if the run opened; return it; set `mask`
const bit<2> WORD_JOIN_CLEAR = 2;  // left: reset if the run opened; clear `mask`
const bit<2> WORD_LEAVE = 3;       // left: return it; set `mask`

// One 32-bit bitmap word of every job; `mask` is a whole metadata field (meta.run_mask_lo
// or meta.run_mask_hi).
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

// What a parent's JoinReply came to.
const bit<2> PARENT_BAD_SESSION = 0;
#ifdef SWITCHML_TIERS
const bit<2> PARENT_TAKEN = 1;
#endif
const bit<2> PARENT_COMPLETE = 2;
const bit<2> PARENT_REJECTED = 3;

control RunTracker(inout headers_t hdr, inout metadata_t meta) {
    Register<run_cell_t, bit<16>>(MAX_JOBS) session;
    Register<shape_cell_t, bit<16>>(MAX_JOBS) shape;
    Register<bit<16>, bit<16>>(MAX_JOBS) lanes;
    Register<bit<32>, bit<32>>(RUN_NONCES) nonce;
    RunWord() joined_lo;
    RunWord() joined_hi;
    RunWord() left_lo;
    RunWord() left_hi;
    RunWord() heard_lo;
    RunWord() heard_hi;
#ifdef SWITCHML_TIERS
    Register<bit<32>, bit<16>>(MAX_JOBS) parent;
    Register<bit<32>, bit<16>>(MAX_JOBS) parent_complete;
    Register<bit<32>, bit<16>>(MAX_JOBS) parent_echo;

    // A run ends: forget the parent's run; return its session (the Abort up names it).
    RegisterAction<bit<32>, bit<16>, bit<32>>(parent) reset_parent = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = 0;
        }
    };

    RegisterAction<bit<32>, bit<16>, bit<32>>(parent) read_parent = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
        }
    };

    // A Join: forget the parent's run with a run that opens; return the session held
    // before (`keep_echo` keeps it).
    RegisterAction<bit<32>, bit<16>, bit<32>>(parent) join_parent = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (meta.run_opened == 1) {
                value = 0;
            }
        }
    };

    // A parent's JoinReply: keep its session if it names the child's run as its nonce
    // (meta.parent_take, decided before); return the session held before.
    RegisterAction<bit<32>, bit<16>, bit<32>>(parent) take_parent = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (meta.parent_take == 1) {
                value = hdr.join_reply.session;
            }
        }
    };

    RegisterAction<bit<32>, bit<16>, bit<32>>(parent_complete) reset_complete = {
        void apply(inout bit<32> value) {
            value = 0;
        }
    };

    RegisterAction<bit<32>, bit<16>, bit<32>>(parent_complete) read_complete = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
        }
    };

    // The parent's COMPLETE of the run taken, once every rank here joined
    // (meta.parent_mark); return whether it was marked before.
    RegisterAction<bit<32>, bit<16>, bit<32>>(parent_complete) mark_complete = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (meta.parent_mark == 1) {
                value = 1;
            }
        }
    };

    // `parent` was forgotten: keep the session it held (meta.echo_session), if any.
    RegisterAction<bit<32>, bit<16>, bit<32>>(parent_echo) keep_echo = {
        void apply(inout bit<32> value) {
            if (meta.echo_session != 0) {
                value = meta.echo_session;
            }
        }
    };

    // A parent's Abort: whether its session is the one kept (the child's own Abort back).
    RegisterAction<bit<32>, bit<16>, bit<32>>(parent_echo) check_echo = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = 0;
            if (value != 0 && value == meta.p_session) {
                rv = 1;
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

    // The opening Join writes its shape and counts the run; returns the runs before it.
    // Any other Join (or a parent's JoinReply) reads the agreed shape with `read_shape`:
    // one output source per action.
    RegisterAction<shape_cell_t, bit<16>, bit<32>>(shape) open_shape = {
        void apply(inout shape_cell_t value, out bit<32> runs) {
            runs = value.runs;
            value.shape = meta.join_shape;
            value.runs = value.runs + 1;
        }
    };

    RegisterAction<shape_cell_t, bit<16>, bit<32>>(shape) read_shape = {
        void apply(inout shape_cell_t value, out bit<32> agreed) {
            agreed = value.shape;
        }
    };

    // The opening Join writes its number of lanes; any other Join reads the agreed one.
    RegisterAction<bit<16>, bit<16>, bit<16>>(lanes) open_lanes = {
        void apply(inout bit<16> value) {
            value = hdr.join.lanes;
        }
    };

    RegisterAction<bit<16>, bit<16>, bit<16>>(lanes) read_lanes = {
        void apply(inout bit<16> value, out bit<16> agreed) {
            agreed = value;
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
        // message picks what they do, and their masks (meta.run_mask_lo/hi, 0 unless set).
        bit<1> joined_on = 0;
        bit<1> left_on = 0;
        bit<1> heard_on = 0;
        bit<2> joined_mode = WORD_READ;
        bit<2> left_mode = WORD_READ;
        meta.run_mask_lo = 0;
        meta.run_mask_hi = 0;
        // The parent registers, last: what each message does to them, and their answer.
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
                    if (hdr.abort.reason == ABORT_RANK_RESTARTED) {
                        if (hdr.abort.detail < meta.parent_members) {
                            meta.abort_detail = hdr.abort.detail;
                        }
                    }
                }
                meta.abort_session = meta.run_session;
            }
        } else if (meta.message == MSG_PARENT_ABORT) {
            held = read_session.execute(j);
            meta.abort_own_run = 0;
            if (held == meta.p_session) {
                meta.abort_own_run = 1;
            }
            if (held == 0) {
                meta.abort_own_run = 0;
            }
            parent_mode = 2;
        } else if (meta.message == MSG_JOIN) {
            meta.join_neg_nonce = 0 - hdr.join.nonce;
            held = open_run.execute(j);
            meta.run_opened = 0;
            if (held == 0) {
                meta.run_opened = 1;
            }
            meta.run_session = held;
            meta.join_shape = hdr.join.slot_count ++ hdr.join.count;
            if (meta.run_opened == 1) {
                // `open_shape` returns the runs before this one; the shape is the Join's.
                agreed = open_shape.execute(j);
                meta.run_session = session_of(hdr.join.nonce, agreed);
                agreed = meta.join_shape;
                open_lanes.execute(j);
                agreed_lanes = hdr.join.lanes;
            } else {
                agreed = read_shape.execute(j);
                agreed_lanes = read_lanes.execute(j);
            }
            meta.shape_ok = 0;
            if (agreed == meta.join_shape) {
                if (agreed_lanes == hdr.join.lanes) {
                    meta.shape_ok = 1;
                }
            }
            // Only a Join of the run's shape changes the run.
            if (meta.shape_ok == 1) {
                meta.run_mask_lo = meta.rank_bit[31:0];
                meta.run_mask_hi = meta.rank_bit[63:32];
            }
            old_nonce = swap_nonce.execute(((bit<32>)j << 6) + (bit<32>)meta.worker_member);
            joined_on = 1;
            left_on = 1;
            heard_on = 1;
            joined_mode = WORD_JOIN_SET;
            left_mode = WORD_JOIN_CLEAR;
            parent_mode = 3;
        } else if (meta.message == MSG_RESULT) {
            held = read_session.execute(j);
            meta.run_session = held;
            parent_mode = 2;
        } else if (meta.message == MSG_JOIN_REPLY) {
            held = read_session.execute(j);
            meta.run_session = held;
            meta.admitted = 0;
            if (hdr.join_reply.nonce == held) {
                meta.admitted = 1;
            }
            if (held == 0) {
                meta.admitted = 0;
            }
            agreed = read_shape.execute(j);
            meta.run_lane_slots = agreed[31:16];
            meta.run_count = agreed[15:0];
            joined_on = 1;
        } else {
            if (meta.message == MSG_ABORT) {
                held = abort_run.execute(j);
            } else {
                held = read_session.execute(j);
            }
            meta.admitted = 0;
            if (held == meta.p_session) {
                meta.admitted = 1;
            }
            if (held == 0) {
                meta.admitted = 0;
            }
            bit<1> probe = 0;
            if (meta.message == MSG_PROBE) {
                probe = 1;
            }
            if (meta.message == MSG_ABORT && meta.admitted == 1 && meta.rank_known == 1) {
                parent_mode = 1;
            } else if (meta.message == MSG_CONTRIBUTION) {
                parent_mode = 2;
            }
            // Any message of the run proves its sender alive (§4.3).
            bit<1> alive = 0;
            if (meta.message == MSG_CONTRIBUTION) {
                alive = 1;
            }
            if (probe == 1) {
                alive = 1;
            }
            if (meta.admitted == 1 && meta.rank_known == 1 && alive == 1) {
                meta.run_mask_lo = meta.rank_bit[31:0];
                meta.run_mask_hi = meta.rank_bit[63:32];
                heard_on = 1;
            }
            if (meta.admitted == 0 && probe == 0) {
                meta.drop_reason = DROP_BAD_SESSION;
            } else if (meta.admitted == 1 && meta.rank_known == 0 && probe == 0) {
                // An Abort or a Leave (a Contribution's and a Status's rank is known).
                if (meta.message == MSG_ABORT) {
                    meta.drop_reason = DROP_UNKNOWN_RANK;
                } else if (meta.message == MSG_LEAVE) {
                    meta.drop_reason = DROP_UNKNOWN_RANK;
                }
            } else if (meta.admitted == 1 && meta.message == MSG_LEAVE) {
                // Only a rank of the run can leave it.
                joined_on = 1;
                left_on = 1;
                left_mode = WORD_LEAVE;
            }
        }

        if (joined_on == 1) {
            joined_lo.apply(j, meta.run_mask_lo, joined_mode, meta.run_opened, lo);
            joined_hi.apply(j, meta.run_mask_hi, joined_mode, meta.run_opened, hi);
        }
        if (left_mode == WORD_LEAVE) {
            meta.run_mask_lo = lo & meta.rank_bit[31:0];
            meta.run_mask_hi = hi & meta.rank_bit[63:32];
        }
        if (left_on == 1) {
            left_lo.apply(j, meta.run_mask_lo, left_mode, meta.run_opened, left_lo_word);
            left_hi.apply(j, meta.run_mask_hi, left_mode, meta.run_opened, left_hi_word);
        }
        if (heard_on == 1) {
            bit<32> heard_word;
            heard_lo.apply(j, meta.run_mask_lo, WORD_JOIN_SET, meta.run_opened, heard_word);
            heard_hi.apply(j, meta.run_mask_hi, WORD_JOIN_SET, meta.run_opened, heard_word);
        }

        bit<32> parent_read = 0;
        bit<32> echo = 0;                       // a parent's Abort in the session kept
        bit<2> taken = PARENT_BAD_SESSION;
#ifdef SWITCHML_TIERS
        if (meta.message == MSG_JOIN_REPLY && meta.pass == 0) {
            // Decided around the two registers, one comparison at a time: the JoinReply
            // names the child's run as its nonce (meta.admitted), or it is a COMPLETE of
            // the parent run taken; a rejected one (parent_result.p4) changes nothing.
            meta.joined = hi ++ lo;
            meta.join_complete = 0;
            if (differs(meta.joined, meta.full_mask) == 0) {
                meta.join_complete = 1;
            }
            bit<8> complete_flag = hdr.join_reply.flags & JOIN_COMPLETE;
            bit<1> rejected = 1;
            if (meta.parent_reject == DROP_NONE) {
                rejected = 0;
            }
            meta.parent_take = 0;
            if (meta.admitted == 1 && rejected == 0) {
                meta.parent_take = 1;
            }
            if (hdr.join_reply.session == 0) {
                meta.parent_take = 0;
            }
            bit<32> taken_session = take_parent.execute(j);
            bit<1> accepted = meta.admitted;
            if (complete_flag == JOIN_COMPLETE) {
                if (taken_session == hdr.join_reply.session) {
                    accepted = 1;
                }
            }
            if (hdr.join_reply.session == 0) {
                accepted = 0;
            }
            if (accepted == 1 && rejected == 1) {
                taken = PARENT_REJECTED;
            } else if (accepted == 1) {
                taken = PARENT_TAKEN;
                meta.parent_mark = 0;
                if (complete_flag == JOIN_COMPLETE) {
                    meta.parent_mark = meta.join_complete;
                }
                bit<32> marked = mark_complete.execute(j);
                if (meta.parent_mark == 1 && marked == 0) {
                    taken = PARENT_COMPLETE;
                }
            }
        } else if (parent_mode == 1) {
            meta.echo_session = reset_parent.execute(j);
            parent_read = meta.echo_session;
            keep_echo.execute(j);
            reset_complete.execute(j);
        } else if (parent_mode == 2) {
            parent_read = read_parent.execute(j);
            if (meta.abort_own_run == 1) {
                // An Abort naming the child's own run, while the parent has not said
                // COMPLETE, reads as of the run taken.
                bit<32> complete = read_complete.execute(j);
                if (complete == 0) {
                    parent_read = meta.p_session;
                }
            }
            if (meta.message == MSG_PARENT_ABORT) {
                echo = check_echo.execute(j);
            }
        } else if (parent_mode == 3) {
            bit<32> old_up = join_parent.execute(j);
            if (meta.run_opened == 1) {
                meta.echo_session = old_up;
            }
            keep_echo.execute(j);
            if (meta.run_opened == 1) {
                reset_complete.execute(j);
            } else {
                parent_read = read_complete.execute(j);
            }
        }
        // A child's run that a worker's Abort or a restart ends ends the whole job's: it
        // owes its parent an Abort (§7), sent as a mirror (switchml.p4).
        bit<1> owes_up = 0;
        if (parent_mode == 1 && meta.tier == TIER_CHILD) {
            owes_up = 1;
        }
        if (parent_read == 0) {
            owes_up = 0;
        }
        if (owes_up == 1) {
            if (meta.message == MSG_JOIN) {
                meta.up_reason = ABORT_RANK_RESTARTED;
                meta.up_session = parent_read;
            } else if (meta.message == MSG_ABORT) {
                meta.up_reason = ABORT_WORKER_FAILED;
                meta.up_session = parent_read;
            }
        }
#endif
        // Whether a parent's message carries the parent run's session, and whether
        // parent_result.p4 rejected it: flags, so that no gateway below negates a `!=`
        // inside a longer condition.
        bit<1> parent_ok = 0;
        if (parent_read == meta.p_session) {
            parent_ok = 1;
        }
        if (parent_read == 0) {
            parent_ok = 0;
        }
        bit<1> parent_rejects = 1;
        if (meta.parent_reject == DROP_NONE) {
            parent_rejects = 0;
        }

        if (meta.pass != 0) {
            // The run ended above.
        } else if (meta.message == MSG_PARENT_ABORT) {
            // Of the parent run taken, or (read_complete) of the child's own run.
            if (parent_ok == 0) {
                // The child's own Abort, passed back by the parent in the parent run's
                // session its last ended run had taken (`parent_echo`), is expected; from
                // its member in any other session it is forged.
                bit<1> echoed = 0;
                if (hdr.prefix.rank == meta.parent_member) {
                    echoed = echo[0:0];
                }
                meta.drop_reason = (echoed == 1) ? DROP_DUPLICATE : DROP_BAD_SESSION;
            } else if (parent_rejects == 1) {
                meta.drop_reason = meta.parent_reject;
            } else {
                meta.run_end = 1;
                meta.run_session = held;
            }
        } else if (meta.message == MSG_RESULT) {
            if (parent_ok == 0) {
                meta.drop_reason = DROP_BAD_SESSION;
            } else if (parent_rejects == 1) {
                meta.drop_reason = meta.parent_reject;
            } else {
                meta.parent_session = parent_read;
                meta.p_session = held;
            }
        } else if (meta.message == MSG_JOIN_REPLY) {
            meta.join_complete = 0;
            if (taken == PARENT_BAD_SESSION) {
                meta.drop_reason = DROP_BAD_SESSION;
            } else if (taken == PARENT_REJECTED) {
                meta.drop_reason = meta.parent_reject;
            } else if (taken == PARENT_COMPLETE) {
                meta.join_complete = 1;
                meta.join_completes = 1;
            }
        } else if (meta.message == MSG_CONTRIBUTION) {
            meta.parent_session = parent_read;
        } else if (meta.message == MSG_JOIN) {
            // Each finding a flag of one comparison (the words are compared by halves).
            bit<64> old = hi ++ lo;
            bit<1> was_complete = 0;
            if (differs(old, meta.full_mask) == 0) {
                was_complete = 1;
            }
            bit<1> restart = 1;
            if (differs(old & meta.rank_bit, 0) == 0) {
                restart = 0;
            }
            if (old_nonce == hdr.join.nonce) {
                restart = 0;
            }
            if (was_complete == 0) {
                restart = 0;
            }
            bit<1> lane_slots_ok = 0;
            if (agreed[31:16] == hdr.join.slot_count) {
                lane_slots_ok = 1;
            }
            bit<1> count_ok = 0;
            if (agreed[15:0] == hdr.join.count) {
                count_ok = 1;
            }
            bit<1> lanes_ok = 0;
            if (agreed_lanes == hdr.join.lanes) {
                lanes_ok = 1;
            }
            bit<1> waits_parent = 0;
            if (meta.tier == TIER_CHILD && was_complete == 1 && parent_read == 0) {
                waits_parent = 1;
            }
            if (restart == 1) {
                meta.run_end = 1;
            } else if (lane_slots_ok == 0) {
                meta.abort_reason = ABORT_LANE_MISMATCH;
                meta.abort_detail = agreed[31:16];
            } else if (count_ok == 0) {
                meta.abort_reason = ABORT_CHUNK_MISMATCH;
                meta.abort_detail = agreed[15:0];
            } else if (lanes_ok == 0) {
                meta.abort_reason = ABORT_LANE_COUNT_MISMATCH;
                meta.abort_detail = agreed_lanes;
            } else if (waits_parent == 1) {
                // A child's run is complete when its parent's is: this Join goes up.
                meta.up = 1;
            } else {
                meta.joined = old | meta.rank_bit;
                meta.join_complete = 0;
                if (differs(meta.joined, meta.full_mask) == 0) {
                    meta.join_complete = 1;
                }
                if (meta.tier == TIER_CHILD) {
                    // The parent's COMPLETE tells the child's ranks, not this Join.
                    meta.join_complete = meta.join_complete & parent_read[0:0];
                } else if (meta.join_complete == 1 && was_complete == 0) {
                    meta.join_completes = 1;
                }
            }
        } else if (left_mode == WORD_LEAVE) {
            if (differs(left_hi_word ++ left_lo_word, hi ++ lo) == 0) {
                meta.run_end = 1;
                meta.run_session = held;
            }
        }
    }
}

#endif
