// count_checker.p4 (v1model): register `count` per slot version, fixed by a use's first
// contribution. Rust twin: p4/model/src/count_checker.rs (CountChecker).
#ifndef _SWITCHML_COUNT_CHECKER_P4_
#define _SWITCHML_COUNT_CHECKER_P4_

control CountChecker(inout metadata_t meta, in bit<16> p_count) {
    register<bit<16>>(POOL_VERSIONS) count;

    apply {
        bit<16> held;
        count.read(held, meta.version_index);
        if (meta.begin == 1) {
            held = p_count;
            count.write(meta.version_index, held);
        }
        meta.held_count = held;
        meta.count_ok = (held == p_count) ? 1w1 : 1w0;
    }
}

#endif
