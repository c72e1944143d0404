// processor.p4 (v1model): one value register; processors.p4 (generated) has 64 of them.
// Rust twin: p4/model/src/processor.rs (Processor). Load, add (wrapping int32) or read the
// cell of this slot version and pass; the packet carries the new value out. Overflow
// follows from the old value, the addend and the sum.
#ifndef _SWITCHML_PROCESSOR_P4_
#define _SWITCHML_PROCESSOR_P4_

control Processor(inout value_h value, inout metadata_t meta, in bit<8> lane) {
    register<bit<32>>(POOL_VALUE_CELLS) cells;

    apply {
        if (lane < meta.lanes) {
            bit<32> index = (meta.version_index << 2) | (bit<32>)meta.pass;
            bit<32> x = (meta.update == UPDATE_READ) ? 32w0 : value.v;
            bit<32> held;
            cells.read(held, index);
            if (meta.update == UPDATE_LOAD) {
                held = x;
            } else if (meta.update == UPDATE_ADD) {
                held = held + x;
            }
            if (meta.update != UPDATE_READ) {
                cells.write(index, held);
            }
            bit<32> old = held - x;
            if (meta.update == UPDATE_ADD && ((old ^ held) & (x ^ held))[31:31] == 1) {
                meta.packet_overflow = 1;
            }
            value.setValid();
            value.v = held;
        } else {
            value.setInvalid();
        }
    }
}

#endif
