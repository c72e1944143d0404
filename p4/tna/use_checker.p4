// use_checker.p4 (TNA): registers `use_session` and `seq` per slot version, one
// RegisterAction each per pass. Rust twin: p4/model/src/use_checker.rs (UseChecker).
// protocol.md §4 step 1, §4.1. The model's one cell {session, seq} is two registers here,
// `use_session` a stage before `seq`, because a Tofino stateful ALU returns one word. A
// packet gets here only with its run's session, never 0, so a tag of 0 (no use yet) or of
// another run both mean "not this run's use": the version counts as idle.
#ifndef _SWITCHML_USE_CHECKER_P4_
#define _SWITCHML_USE_CHECKER_P4_

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

    // The version takes this use if it holds another run's (meta.in_session, from
    // use_session a stage before) or an older use of this run; returns the number held
    // before. Two comparisons, all a Tofino 1 stateful ALU has: the control tells begin,
    // current and stale apart from the number returned.
    RegisterAction<bit<32>, bit<32>, bit<32>>(seq) check_use = {
        void apply(inout bit<32> value, out bit<32> held) {
            held = value;
            if (meta.in_session == 0 || (int<32>)(meta.p_seq - value) > 0) {
                value = meta.p_seq;
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
            bit<32> held = check_use.execute(meta.version_index);
            // How far this use is ahead of the one held (serial numbers: the sign bit set is
            // behind), tested one comparison at a time.
            bit<32> ahead = meta.p_seq - held;
            if (meta.in_session == 0) {
                meta.begin = 1;
            } else if (ahead == 0) {
                // The use held: current.
            } else if (ahead[31:31] == 0) {
                meta.begin = 1;
            } else {
                meta.stale = 1;
                meta.drop_reason = DROP_STALE;
            }
        }
    }
}

#endif
