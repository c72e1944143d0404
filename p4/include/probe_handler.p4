// probe_handler.p4 (both targets): who is missing (protocol.md §3.4-3.5, §4 "Probe").
// Rust twin: p4/model/src/probe_handler.rs (ProbeHandler). It only decides, after the run
// tracker checked the Probe's session (meta.admitted): a session that is not the run's is
// answered with Abort SessionEnded. The reads of `seq`, `seen` and `remaining` are read
// actions of the controls that own those registers (one access each in the pass, as for a
// Contribution). Every Abort answering a Probe echoes its session.
#ifndef _SWITCHML_PROBE_HANDLER_P4_
#define _SWITCHML_PROBE_HANDLER_P4_

control ProbeHandler(inout headers_t hdr, inout metadata_t meta, out bit<1> read) {
    apply {
        read = 0;
        meta.abort_session = hdr.probe.session;
        if (meta.job_hit == 0) {
            meta.abort_reason = ABORT_UNKNOWN_JOB;
            meta.abort_detail = 0;
        } else if (meta.admitted == 0) {
            meta.abort_reason = ABORT_SESSION_ENDED;
            meta.abort_detail = 0;
        } else if (meta.rank_known == 0) {
            meta.abort_reason = ABORT_UNKNOWN_RANK;
            meta.abort_detail = meta.wire_world;
        } else if (hdr.probe.slot >= meta.slot_count) {
            meta.abort_reason = ABORT_SLOT_RANGE;
            meta.abort_detail = meta.slot_count;
        } else {
            read = 1;
        }
    }
}

#endif
