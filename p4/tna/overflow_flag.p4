// overflow_flag.p4 (TNA): register `overflow` per slot version, taken in the packet's
// last value pass. Rust twin: p4/model/src/overflow_flag.rs (OverflowFlag).
#ifndef _SWITCHML_OVERFLOW_FLAG_P4_
#define _SWITCHML_OVERFLOW_FLAG_P4_

control OverflowFlag(inout metadata_t meta) {
    Register<bit<8>, bit<32>>(POOL_VERSIONS) overflow;

    RegisterAction<bit<8>, bit<32>, bit<8>>(overflow) load = {
        void apply(inout bit<8> held, out bit<8> flag) {
            held = (bit<8>)meta.packet_overflow;
            flag = held;
        }
    };

    RegisterAction<bit<8>, bit<32>, bit<8>>(overflow) or_in = {
        void apply(inout bit<8> held, out bit<8> flag) {
            held = held | (bit<8>)meta.packet_overflow;
            flag = held;
        }
    };

    RegisterAction<bit<8>, bit<32>, bit<8>>(overflow) read = {
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
        meta.overflow = flag[0:0];
    }
}

#endif
