// overflow_flag.p4 (TNA): register `flags` per slot version, the Result's sticky flags
// (OVERFLOW and the non-finite kinds, protocol.md §5.4) ORed in one register, so that the
// non-finite kinds cost no stateful ALU of their own; taken in the packet's last value pass.
// Rust twin: p4/model/src/overflow_flag.rs (OverflowFlag).
#ifndef _SWITCHML_OVERFLOW_FLAG_P4_
#define _SWITCHML_OVERFLOW_FLAG_P4_

control OverflowFlag(inout metadata_t meta) {
    Register<bit<8>, bit<32>>(POOL_VERSIONS) flags;

    RegisterAction<bit<8>, bit<32>, bit<8>>(flags) load = {
        void apply(inout bit<8> held, out bit<8> flag) {
            held = meta.packet_flags;
            flag = held;
        }
    };

    RegisterAction<bit<8>, bit<32>, bit<8>>(flags) or_in = {
        void apply(inout bit<8> held, out bit<8> flag) {
            held = held | meta.packet_flags;
            flag = held;
        }
    };

    RegisterAction<bit<8>, bit<32>, bit<8>>(flags) read = {
        void apply(inout bit<8> held, out bit<8> flag) {
            flag = held;
        }
    };

    apply {
        bit<8> flag;
        if (meta.update == UPDATE_LOAD) {
            flag = load.execute(meta.version_index);
        } else if (meta.update == UPDATE_ADD) {
            flag = or_in.execute(meta.version_index);
        } else {
            flag = read.execute(meta.version_index);
        }
        meta.result_flags = flag;
    }
}

#endif
