// run_tracker.p4 (v1model): each job's current run (protocol.md §4.1).
// Rust twin: p4/model/src/run_tracker.rs (RunTracker). Registers, one cell per job table
// entry: `session` ({runs:32, session:32}: the runs the job opened, and the run's session,
// session_of(its opener's nonce, the runs before); session 0: no run), `shape` ({runs:32,
// lane slots:16, count:16}: the runs again, and the shape the opening Join agreed), `lanes`
// (the run's lanes per rank, the rest of its shape), `joined` and `left` (bitmaps), and
// `nonce`, each rank's process nonce at cell 64 x entry + rank. The opening Join counts the run in both `session` and `shape`: TNA's
// `session` stage returns one word (the session held), so the opening Join learns the runs
// before it, and from them the session it opened, at `shape`; this program keeps the same
// layout so the two read alike.
//
// Pass 0, every message of a known job (a Join only once join_handler.p4 passed it):
// - Contribution, Probe, Abort, Leave: admitted only with the run's session (else
//   BadSession; a Probe gets Abort SessionEnded from probe_handler.p4). An admitted Abort
//   of a known rank ends the run; an admitted Leave marks its rank left, and if every
//   joined rank has now left the run ends in a second pass (meta.run_end).
// - Join: opens a run if there is none (counting it, resetting `shape`, `lanes`, `joined`,
//   `left`);
//   a rank of the complete run with a new nonce ends it in a second pass (Abort
//   RankRestarted to every rank); otherwise the lane shape must be the run's, and the rank
//   is recorded.
// - Status: reads `session` and `joined` (empty while no run is open).
// - At a child switch (protocol.md §7), register `parent` ({complete:32, session:32}, the
//   parent run's): reset by the Join that opens a run and wherever a run ends; read by a
//   Join (whose Join goes up while the parent's run is not complete) and by a Contribution
//   (the session of what goes up); a Result of the parent's job is admitted with the
//   parent run's session (then meta.p_session is the child's, for the use check), a
//   JoinReply with the child's session as nonce or a COMPLETE of the parent run taken;
//   a JoinReply then writes the parent's session, and its first COMPLETE, once every rank
//   joined, the flag (meta.join_completes: multicast to the child's ranks). Rejections of
//   parent_result.p4 (meta.parent_reject) come after the session check. An Abort of the
//   parent's job (MSG_PARENT_ABORT) is taken with the parent run's session or, while
//   `parent` says no COMPLETE, the child's own (else Duplicate if it names this child's
//   member in the session `parent_echo` kept, its own Abort back, or BadSession), and
//   ends the child's run in a second pass (Abort ParentFailed to its ranks). A worker's
//   Abort or a restart that ends a child's run holding a parent session sets
//   meta.up_reason/up_session: the Abort it owes its parent, a clone rewritten in the
//   egress.
// - Register `parent_echo` (the reference's `Run::echo`) keeps the parent session `parent`
//   held wherever `parent` is forgotten (a run that ends, a Join that opens the next), if
//   it held one: the child's own Abort up comes back from the parent in that session, a
//   duplicate; a parent's Abort from this child's member in any other session is forged
//   (unauthorized, BadSession).
// - Register `heard` (protocol.md §4.3; Rust twin: p4/model/src/liveness.rs, Liveness):
//   one bitmap per entry of the members heard since the controller's last sweep. An
//   admitted Contribution or Probe of a known rank sets its bit (a Probe with a slot
//   outside the job's too, which the model counts only when answered: no conforming worker
//   sends one); a Join that makes or keeps its rank a member sets it, and the Join that
//   opens a run writes its bit alone. The controller reads and clears it every
//   dead_after / 4 and ends a run whose member stayed quiet 4 sweeps in a row.
// The second pass (meta.pass != 0) only ends the run, if no one ended it in between.
// Each register is read and written at most once per pass.
#ifndef _SWITCHML_RUN_TRACKER_P4_
#define _SWITCHML_RUN_TRACKER_P4_

control RunTracker(inout headers_t hdr, inout metadata_t meta) {
    register<bit<64>>(MAX_JOBS) session;
    register<bit<64>>(MAX_JOBS) shape;
    register<bit<16>>(MAX_JOBS) lanes;
    register<bit<32>>(RUN_NONCES) nonce;
    register<bit<64>>(MAX_JOBS) joined;
    register<bit<64>>(MAX_JOBS) left;
    register<bit<64>>(MAX_JOBS) parent;
    register<bit<32>>(MAX_JOBS) parent_echo;
    register<bit<64>>(MAX_JOBS) heard;

    apply {
        bit<32> j = (bit<32>)meta.job_index;
        bit<64> cell;
        session.read(cell, j);
        bit<32> runs = cell[63:32];
        bit<32> held = cell[31:0];
        // Ending a run clears the session and keeps the count of runs.
        bit<64> ended = runs ++ 32w0;
        bit<64> up;
        parent.read(up, j);
        bit<32> parent_held = up[31:0];
        if (meta.pass != 0) {
            if (held == meta.run_session) {
                session.write(j, ended);
                parent.write(j, 0);
                if (parent_held != 0) {
                    parent_echo.write(j, parent_held);
                }
                // A child's run that a restart ends ends the whole job's: it owes its
                // parent an Abort (§7), sent as a clone (switchml.p4).
                if (meta.message == MSG_JOIN && meta.tier == TIER_CHILD && parent_held != 0) {
                    meta.up_reason = ABORT_RANK_RESTARTED;
                    meta.up_session = parent_held;
                }
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
        } else if (meta.message == MSG_JOIN) {
            meta.run_opened = (held == 0) ? 1w1 : 1w0;
            meta.run_session = held;
            if (held == 0) {
                session.write(j, (runs + 1) ++ session_of(hdr.join.nonce, runs));
            }
            bit<32> given = hdr.join.slot_count ++ hdr.join.count;
            bit<64> shape_cell;
            shape.read(shape_cell, j);
            bit<32> agreed = shape_cell[31:0];
            if (meta.run_opened == 1) {
                // The runs before this one, counted here too: the session it opened.
                bit<32> runs_before = shape_cell[63:32];
                meta.run_session = session_of(hdr.join.nonce, runs_before);
                agreed = given;
                shape.write(j, (runs_before + 1) ++ agreed);
            }
            bit<16> agreed_lanes;
            lanes.read(agreed_lanes, j);
            if (meta.run_opened == 1) {
                agreed_lanes = hdr.join.lanes;
                lanes.write(j, agreed_lanes);
            }
            meta.shape_ok = (agreed == given && agreed_lanes == hdr.join.lanes) ? 1w1 : 1w0;
            // Only a Join of the run's shape changes the run.
            bit<64> mask = (meta.shape_ok == 1) ? meta.rank_bit : 64w0;
            bit<32> n = (j << 6) + (bit<32>)meta.worker_member;
            bit<32> old_nonce;
            nonce.read(old_nonce, n);
            if (meta.shape_ok == 1) {
                nonce.write(n, hdr.join.nonce);
            }
            bit<64> old;
            joined.read(old, j);
            if (meta.run_opened == 1) {
                old = 0;
            }
            joined.write(j, old | mask);
            bit<64> gone;
            left.read(gone, j);
            if (meta.run_opened == 1) {
                gone = 0;
            }
            left.write(j, gone & ~mask);
            if (meta.run_opened == 1) {
                up = 0;
                parent.write(j, 0);
                if (parent_held != 0) {
                    parent_echo.write(j, parent_held);
                }
            }
            meta.parent_session = up[31:0];
            meta.parent_complete = up[32:32];
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
            } else if (meta.tier == TIER_CHILD && was_complete == 1
                    && meta.parent_complete == 0) {
                // A child's run is complete when its parent's is: this Join goes up.
                meta.up = 1;
            } else {
                meta.joined = old | meta.rank_bit;
                meta.join_complete = (meta.joined == meta.full_mask) ? 1w1 : 1w0;
                if (meta.tier == TIER_CHILD) {
                    // The parent's COMPLETE tells the child's ranks, not this Join.
                    meta.join_complete = meta.join_complete & meta.parent_complete;
                } else if (meta.join_complete == 1 && was_complete == 0) {
                    meta.join_completes = 1;
                }
            }
            // The rank is (still) a member: heard. The opening Join starts the word afresh.
            if (meta.shape_ok == 1 && meta.run_end == 0) {
                bit<64> h;
                heard.read(h, j);
                if (meta.run_opened == 1) {
                    h = 0;
                }
                heard.write(j, h | meta.rank_bit);
            }
        } else if (meta.message == MSG_RESULT) {
            meta.run_session = held;
            if (parent_held == 0 || parent_held != meta.p_session) {
                meta.drop_reason = DROP_BAD_SESSION;
            } else if (meta.parent_reject != DROP_NONE) {
                meta.drop_reason = meta.parent_reject;
            } else {
                meta.parent_session = parent_held;
                meta.p_session = held;
            }
        } else if (meta.message == MSG_PARENT_ABORT) {
            // An Abort of the parent's job (§7): of the parent run taken, or, while the
            // parent has not said COMPLETE, of this child's run (an answer to its Join up).
            bit<1> of_our_run = (parent_held != 0 && meta.p_session == parent_held)
                ? 1w1 : 1w0;
            bit<1> to_our_join = (held != 0 && up[32:32] == 0 && meta.p_session == held)
                ? 1w1 : 1w0;
            bit<32> echo;
            parent_echo.read(echo, j);
            if (of_our_run == 0 && to_our_join == 0) {
                // The child's own Abort, passed back by the parent in the parent run's
                // session its last ended run had taken (`parent_echo`), is expected; from
                // its member in any other session it is forged.
                bit<1> echoed = (hdr.prefix.rank == meta.parent_member && echo != 0
                    && meta.p_session == echo) ? 1w1 : 1w0;
                meta.drop_reason = (echoed == 1) ? DROP_DUPLICATE : DROP_BAD_SESSION;
            } else if (meta.parent_reject != DROP_NONE) {
                meta.drop_reason = meta.parent_reject;
            } else {
                meta.run_end = 1;
                meta.run_session = held;
            }
        } else if (meta.message == MSG_JOIN_REPLY) {
            meta.run_session = held;
            bit<64> shape_cell;
            shape.read(shape_cell, j);
            meta.run_lane_slots = shape_cell[31:16];
            meta.run_count = shape_cell[15:0];
            joined.read(meta.joined, j);
            bit<1> complete = ((hdr.join_reply.flags & JOIN_COMPLETE) != 0) ? 1w1 : 1w0;
            bit<1> ours = (held != 0 && hdr.join_reply.nonce == held) ? 1w1 : 1w0;
            bit<1> of_our_run = (complete == 1 && parent_held != 0
                && hdr.join_reply.session == parent_held) ? 1w1 : 1w0;
            if ((ours == 0 && of_our_run == 0) || hdr.join_reply.session == 0) {
                meta.drop_reason = DROP_BAD_SESSION;
            } else if (meta.parent_reject != DROP_NONE) {
                meta.drop_reason = meta.parent_reject;
            } else {
                bit<32> done = up[63:32];
                if (complete == 1 && done == 0 && meta.joined == meta.full_mask) {
                    done = 1;
                    meta.join_complete = 1;
                    meta.join_completes = 1;
                }
                parent.write(j, done ++ hdr.join_reply.session);
            }
        } else {
            meta.admitted = (held != 0 && held == meta.p_session) ? 1w1 : 1w0;
            // What a child's completed use or resend carries up.
            meta.parent_session = parent_held;
            if (meta.admitted == 1 && meta.rank_known == 1
                    && (meta.message == MSG_CONTRIBUTION || meta.message == MSG_PROBE)) {
                // Any message of the run proves its sender alive (§4.3).
                bit<64> h;
                heard.read(h, j);
                heard.write(j, h | meta.rank_bit);
            }
            if (meta.admitted == 0) {
                if (meta.message != MSG_PROBE) {
                    meta.drop_reason = DROP_BAD_SESSION;
                }
            } else if (meta.message == MSG_ABORT || meta.message == MSG_LEAVE) {
                if (meta.rank_known == 0) {
                    meta.drop_reason = DROP_UNKNOWN_RANK;
                } else if (meta.message == MSG_ABORT) {
                    session.write(j, ended);
                    parent.write(j, 0);
                    if (parent_held != 0) {
                        parent_echo.write(j, parent_held);
                    }
                    // A child's run that ends ends the whole job's: it owes its parent an
                    // Abort (§7), sent as a clone (switchml.p4).
                    if (meta.tier == TIER_CHILD && parent_held != 0) {
                        meta.up_reason = ABORT_WORKER_FAILED;
                        meta.up_session = parent_held;
                    }
                } else {
                    bit<64> members;
                    joined.read(members, j);
                    bit<64> gone;
                    left.read(gone, j);
                    gone = gone | (members & meta.rank_bit);
                    left.write(j, gone);
                    if (gone == members) {
                        meta.run_end = 1;
                        meta.run_session = held;
                    }
                }
            }
        }
    }
}

#endif
