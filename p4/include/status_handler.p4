// status_handler.p4 (both targets): answer `switchml doctor` (protocol.md §3.7-3.8, §4
// "Status"). Rust twin: p4/model/src/status_handler.rs (StatusHandler). Any sender may ask
// about a known job: the worker table is not consulted and the rank is only echoed; an
// unknown job is refused with Abort UnknownJob. It only decides: the reads of `session` and
// `joined` are the run tracker's read (one access each in the pass, as for a Join), and
// reply_builder.p4 writes the StatusReply: RUN_OPEN, and the bitmap of the current run. Its
// 29 counters are zero: a data plane cannot read its own counters (p4/README.md, known
// gaps).
#ifndef _SWITCHML_STATUS_HANDLER_P4_
#define _SWITCHML_STATUS_HANDLER_P4_

control StatusHandler(inout headers_t hdr, inout metadata_t meta) {
    apply {
        if (meta.job_hit == 0) {
            meta.abort_reason = ABORT_UNKNOWN_JOB;
            meta.abort_detail = 0;
        }
    }
}

#endif
