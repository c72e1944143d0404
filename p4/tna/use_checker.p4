// use_checker.p4 (TNA): register `seq` per slot version, one RegisterAction per pass.
// Rust twin: p4/model/src/use_checker.rs (UseChecker). protocol.md §4 step 1. The model's
// one cell {used, seq} is two registers here, `begun` a stage before `seq`, because a
// Tofino stateful ALU returns one word; each still runs once per pass.
#ifndef _SWITCHML_USE_CHECKER_P4_
#define _SWITCHML_USE_CHECKER_P4_

const bit<8> USE_BEGIN = 0;
const bit<8> USE_CURRENT = 1;
const bit<8> USE_STALE = 2;

control UseChecker(inout metadata_t meta, in bit<32> p_seq, in bit<1> probe) {
    Register<bit<32>, bit<32>>(POOL_VERSIONS) seq;
    Register<bit<1>, bit<32>>(POOL_VERSIONS) begun;   // whether any use began

    RegisterAction<bit<1>, bit<32>, bit<1>>(begun) mark_begun = {
        void apply(inout bit<1> value, out bit<1> was) {
            was = value;
            value = 1;
        }
    };

    RegisterAction<bit<1>, bit<32>, bit<1>>(begun) read_begun = {
        void apply(inout bit<1> value, out bit<1> was) {
            was = value;
        }
    };

    RegisterAction<bit<32>, bit<32>, bit<8>>(seq) check_use = {
        void apply(inout bit<32> value, out bit<8> use) {
            if (meta.used == 0 || (int<32>)(p_seq - value) > 0) {
                value = p_seq;
                use = USE_BEGIN;
            } else if (value == p_seq) {
                use = USE_CURRENT;
            } else {
                use = USE_STALE;
            }
        }
    };

    RegisterAction<bit<32>, bit<32>, bit<32>>(seq) read_seq = {
        void apply(inout bit<32> value, out bit<32> held) {
            held = value;
        }
    };

    apply {
        if (probe == 1) {
            meta.used = read_begun.execute(meta.version_index);
            meta.held_seq = read_seq.execute(meta.version_index);
        } else {
            meta.used = mark_begun.execute(meta.version_index);
            bit<8> use = check_use.execute(meta.version_index);
            if (use == USE_BEGIN) {
                meta.begin = 1;
            } else if (use == USE_STALE) {
                meta.stale = 1;
                meta.drop_reason = DROP_STALE;
            }
        }
    }
}

#endif
