// use_checker.p4 (TNA): registers `use_session` and `seq` per slot version, one
// RegisterAction each per pass. Rust twin: p4/model/src/use_checker.rs (UseChecker).
// protocol.md §4 step 1, §4.1. The model's one cell {session, seq} is two registers here,
// `use_session` a stage before `seq`, because a Tofino stateful ALU returns one word. A
// packet gets here only with its run's session, never 0, so a tag of 0 (no use yet) or of
// another run both mean "not this run's use": the version counts as idle.
#ifndef _SWITCHML_USE_CHECKER_P4_
#define _SWITCHML_USE_CHECKER_P4_

const bit<8> USE_BEGIN = 0;
const bit<8> USE_CURRENT = 1;
const bit<8> USE_STALE = 2;

control UseChecker(inout metadata_t meta, in bit<1> probe) {
    Register<bit<32>, bit<32>>(POOL_VERSIONS) seq;
    Register<bit<32>, bit<32>>(POOL_VERSIONS) use_session;   // the run of the use held

    // Whether the version holds a use of this run; it will, after this packet.
    RegisterAction<bit<32>, bit<32>, bit<1>>(use_session) tag_use = {
        void apply(inout bit<32> value, out bit<1> same) {
            same = 0;
            if (value == meta.p_session) {
                same = 1;
            }
            value = meta.p_session;
        }
    };

    RegisterAction<bit<32>, bit<32>, bit<1>>(use_session) read_tag = {
        void apply(inout bit<32> value, out bit<1> same) {
            same = 0;
            if (value == meta.p_session) {
                same = 1;
            }
        }
    };

    RegisterAction<bit<32>, bit<32>, bit<8>>(seq) check_use = {
        void apply(inout bit<32> value, out bit<8> use) {
            if (meta.in_session == 0 || (int<32>)(meta.p_seq - value) > 0) {
                value = meta.p_seq;
                use = USE_BEGIN;
            } else if (value == meta.p_seq) {
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
            meta.in_session = read_tag.execute(meta.version_index);
            meta.held_seq = read_seq.execute(meta.version_index);
        } else {
            meta.in_session = tag_use.execute(meta.version_index);
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
