// count_checker.p4 (TNA): register `count` per slot version, fixed by a use's first
// contribution. Rust twin: p4/model/src/count_checker.rs (CountChecker).
#ifndef _SWITCHML_COUNT_CHECKER_P4_
#define _SWITCHML_COUNT_CHECKER_P4_

control CountChecker(inout metadata_t meta, in bit<16> p_count) {
    Register<bit<16>, bit<32>>(POOL_VERSIONS) count;

    RegisterAction<bit<16>, bit<32>, bit<16>>(count) begin_use = {
        void apply(inout bit<16> value, out bit<16> held) {
            value = p_count;
            held = value;
        }
    };

    RegisterAction<bit<16>, bit<32>, bit<16>>(count) read_count = {
        void apply(inout bit<16> value, out bit<16> held) {
            held = value;
        }
    };

    apply {
        if (meta.begin == 1) {
            meta.held_count = begin_use.execute(meta.version_index);
        } else {
            meta.held_count = read_count.execute(meta.version_index);
        }
        meta.count_ok = (meta.held_count == p_count) ? 1w1 : 1w0;
    }
}

#endif
