// use_checker.p4 (v1model): register `seq`, {session:32, seq:32} per slot version.
// Rust twin: p4/model/src/use_checker.rs (UseChecker). protocol.md §4 step 1: a newer use
// (p.seq - seq read as signed is positive), or a version whose use is of another run than
// the packet's session (§4.1; session 0: no use yet), begins a use; an older one is Stale.
// A Probe reads the use number if the version holds a use of its run (meta.in_session).
// One read and at most one write of the register per pass.
#ifndef _SWITCHML_USE_CHECKER_P4_
#define _SWITCHML_USE_CHECKER_P4_

control UseChecker(inout metadata_t meta, in bit<1> probe) {
    register<bit<64>>(POOL_VERSIONS) seq;

    apply {
        bit<64> cell;
        seq.read(cell, meta.version_index);
        bit<32> held = cell[31:0];
        bit<1> same = (cell[63:32] == meta.p_session) ? 1w1 : 1w0;
        if (probe == 1) {
            meta.in_session = same;
            meta.held_seq = held;
        } else {
            bit<32> diff = meta.p_seq - held;
            if (same == 0 || (diff != 0 && diff[31:31] == 0)) {
                meta.begin = 1;
                seq.write(meta.version_index, meta.p_session ++ meta.p_seq);
            } else if (meta.p_seq != held) {
                meta.stale = 1;
                meta.drop_reason = DROP_STALE;
            }
        }
    }
}

#endif
