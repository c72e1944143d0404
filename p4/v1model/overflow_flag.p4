// overflow_flag.p4 (v1model): register `flags` per slot version, the Result's sticky flags
// (OVERFLOW and the non-finite kinds, protocol.md §5.4) ORed in one register, taken in the
// packet's last value pass. Rust twin: p4/model/src/overflow_flag.rs (OverflowFlag).
#ifndef _SWITCHML_OVERFLOW_FLAG_P4_
#define _SWITCHML_OVERFLOW_FLAG_P4_

control OverflowFlag(inout metadata_t meta) {
    register<bit<8>>(POOL_VERSIONS) flags;

    apply {
        bit<8> held;
        flags.read(held, meta.version_index);
        if (meta.update == UPDATE_LOAD) {
            held = meta.packet_flags;
        } else if (meta.update == UPDATE_ADD) {
            held = held | meta.packet_flags;
        }
        if (meta.update == UPDATE_LOAD || meta.update == UPDATE_ADD) {
            flags.write(meta.version_index, held);
        }
        meta.result_flags = held;
    }
}

#endif
