// job_counters.p4 (v1model): per-job event counters, one array per event indexed by the
// job table entry, so one packet touches each array at most once.
// Rust twin: p4/model/src/job_counters.rs (JobCounters). All twelve count here, in the
// ingress; the TNA program counts job_overflows in its egress instead (a Tofino ingress
// has no stage left after the overflow flag's), which BMv2, without stages, does not need
// (nor has it Tofino's first-replica flag to count a multicast once in the egress).
#ifndef _SWITCHML_JOB_COUNTERS_P4_
#define _SWITCHML_JOB_COUNTERS_P4_

control JobCounters(in metadata_t meta) {
    counter(MAX_JOBS, CounterType.packets) job_contributions;
    counter(MAX_JOBS, CounterType.packets) job_completions;
    counter(MAX_JOBS, CounterType.packets) job_retransmit_replies;
    counter(MAX_JOBS, CounterType.packets) job_duplicates;
    counter(MAX_JOBS, CounterType.packets) job_stale;
    counter(MAX_JOBS, CounterType.packets) job_rejected;
    counter(MAX_JOBS, CounterType.packets) job_joins;
    counter(MAX_JOBS, CounterType.packets) job_probes;
    counter(MAX_JOBS, CounterType.packets) job_aborts;
    counter(MAX_JOBS, CounterType.packets) job_overflows;
    counter(MAX_JOBS, CounterType.packets) job_runs;
    counter(MAX_JOBS, CounterType.packets) job_unauthorized;

    apply {
        bit<32> j = (bit<32>)meta.job_index;
        if (meta.job_hit == 1 && meta.verdict != VERDICT_RECIRCULATE) {
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
                    if (meta.up == 0 && meta.update != UPDATE_NONE) {
                        job_retransmit_replies.count(j);
                    }
                } else {
                    job_contributions.count(j);
                    if (meta.last == 1) {
                        job_completions.count(j);
                        if (meta.result_flags[0:0] == 1) {     // FLAG_OVERFLOW
                            job_overflows.count(j);
                        }
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

#endif
