// overflow_flag.p4 (v1model): register `overflow` per slot version, taken in the packet's
// last value pass. Rust twin: p4/model/src/overflow_flag.rs (OverflowFlag).
#ifndef _SWITCHML_OVERFLOW_FLAG_P4_
#define _SWITCHML_OVERFLOW_FLAG_P4_

control OverflowFlag(inout metadata_t meta) {
    register<bit<1>>(POOL_VERSIONS) overflow;

    apply {
        bit<1> held;
        overflow.read(held, meta.version_index);
        if (meta.update == UPDATE_LOAD) {
            held = meta.packet_overflow;
        } else if (meta.update == UPDATE_ADD) {
            held = held | meta.packet_overflow;
        }
        if (meta.update == UPDATE_LOAD || meta.update == UPDATE_ADD) {
            overflow.write(meta.version_index, held);
        }
        meta.overflow = held;
    }
}

#endif
