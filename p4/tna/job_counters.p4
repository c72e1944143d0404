// job_counters.p4 (TNA): per-job event counters, one Counter per event indexed by the job
// table entry. Rust twin: p4/model/src/job_counters.rs (JobCounters). Eleven count in the
// ingress (JobCounters); job_overflows counts in the egress (JobEgressCounters): it depends
// on the overflow flag, which the ingress takes in its last stage (overflow_flag.p4), so a
// counter after it would need a 13th ingress stage (p4/README.md, "Resources").
#ifndef _SWITCHML_JOB_COUNTERS_P4_
#define _SWITCHML_JOB_COUNTERS_P4_

control JobCounters(in metadata_t meta) {
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_contributions;
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_completions;
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_retransmit_replies;
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_duplicates;
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_stale;
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_rejected;
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_joins;
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_probes;
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_aborts;
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_runs;
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_unauthorized;

    apply {
        bit<16> j = meta.job_index;
        // A flag first, so that no gateway below negates a `!=` inside a conjunction.
        bit<1> counts = meta.job_hit;
        if (meta.verdict == VERDICT_RECIRCULATE) {
            counts = 0;
        }
        if (counts == 1) {
            if (meta.message == MSG_CONTRIBUTION || meta.message == MSG_RESULT) {
                // A parent's Result at a child (§7) counts only its drops.
                if (meta.drop_reason == DROP_STALE) {
                    job_stale.count(j);
                } else if (meta.drop_reason == DROP_DUPLICATE) {
                    job_duplicates.count(j);
                } else if (meta.drop_reason == DROP_BAD_SESSION) {
                    job_unauthorized.count(j);
                } else if (meta.drop_reason != DROP_NONE) {
                    job_rejected.count(j);
                } else if (meta.message == MSG_RESULT) {
                    // Stored and multicast: no event.
                } else if (meta.outcome == OUTCOME_RETRANSMIT) {
                    // A child's resend that goes up (or waits: no update) is no retransmit
                    // reply.
                    if (meta.update == UPDATE_NONE) {
                        // It waits.
                    } else if (meta.up == 0) {
                        job_retransmit_replies.count(j);
                    }
                } else {
                    job_contributions.count(j);
                    if (meta.last == 1) {
                        job_completions.count(j);       // job_overflows: in the egress
                    }
                }
            } else if (meta.message == MSG_JOIN) {
                if (meta.abort_reason == 0) {
                    job_joins.count(j);
                    if (meta.run_opened == 1) {
                        job_runs.count(j);
                    }
                } else if (meta.abort_reason == ABORT_RANK_RESTARTED) {
                    job_aborts.count(j);
                }
            } else if (meta.message == MSG_PARENT_ABORT) {
                // A parent's Abort at a child (§7): taken in its second pass.
                if (meta.drop_reason == DROP_DUPLICATE) {
                    job_duplicates.count(j);
                } else if (meta.drop_reason == DROP_BAD_SESSION) {
                    job_unauthorized.count(j);
                } else if (meta.drop_reason != DROP_NONE) {
                    job_rejected.count(j);
                } else if (meta.abort_reason == ABORT_PARENT_FAILED) {
                    job_aborts.count(j);
                }
            } else if (meta.message == MSG_JOIN_REPLY) {
                if (meta.drop_reason == DROP_BAD_SESSION) {
                    job_unauthorized.count(j);
                } else if (meta.drop_reason != DROP_NONE) {
                    job_rejected.count(j);
                }
            } else if (meta.message == MSG_PROBE) {
                if (meta.abort_reason == 0) {
                    job_probes.count(j);
                } else if (meta.abort_reason == ABORT_SESSION_ENDED) {
                    job_unauthorized.count(j);
                }
            } else if (meta.drop_reason == DROP_BAD_SESSION) {
                job_unauthorized.count(j);              // an Abort or a Leave
            } else if (meta.message == MSG_ABORT && meta.drop_reason == DROP_NONE) {
                job_aborts.count(j);
            }
        }
    }
}

// The egress part: a use that completed with an overflow, counted from the flag byte of the
// Result the completing Contribution became. That Result is the only one multicast (rank
// RANK_ALL, no RETRANSMIT flag; a resend's Result is unicast with RETRANSMIT); the egress
// sees one copy per replica and counts the group's first (egress_rid_first, tna.p4's
// egress_intrinsic_metadata_t). The job table entry comes in the egress bridge header.
// At a child switch (protocol.md §7) the completing Contribution goes up instead, as a
// Contribution (no RETRANSMIT) with the partial sum's flag: counted here too, once (no
// replicas), also when it is dropped in this egress for want of a parent session
// (egress_bridge.drop); the parent's Result multicast down is no completion
// (egress_bridge.completes is 0) and is not counted.
control JobEgressCounters(in egress_headers_t hdr, in egress_intrinsic_metadata_t eg_intr_md) {
    Counter<bit<64>, bit<16>>(MAX_JOBS, CounterType_t.PACKETS) job_overflows;

    apply {
        // The flag byte is read only from a valid header (the parser extracts `data` for a
        // Result only).
        if (hdr.data.isValid()) {
            bit<8> flags = hdr.data.flags;
            bit<1> once = (eg_intr_md.egress_rid_first == 1
                || hdr.prefix.msg_type == TYPE_CONTRIBUTION) ? 1w1 : 1w0;
            if (hdr.egress_bridge.recirculate == 0 && hdr.egress_bridge.completes == 1
                    && once == 1
                    && (flags & FLAG_RETRANSMIT) == 0 && (flags & FLAG_OVERFLOW) != 0) {
                job_overflows.count(hdr.egress_bridge.job_index);
            }
        }
    }
}

#endif
