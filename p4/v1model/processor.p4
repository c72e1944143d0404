// processor.p4 (v1model): one value register; processors.p4 (generated) has
// VALUES_PER_PASS of them. Rust twin: p4/model/src/processor.rs (Processor). Load, add or
// read the cell of this slot version and block (next_step_selector.p4 picks the block; a
// harvest pass reads); the packet carries the new value out if its block stays in the
// packet. Overflow follows from the old value, the addend and the sum.
#ifndef _SWITCHML_PROCESSOR_P4_
#define _SWITCHML_PROCESSOR_P4_

control Processor(inout value_h value, inout metadata_t meta, in bit<8> lane) {
    register<bit<32>>(POOL_VALUE_CELLS) cells;

    apply {
        if (lane < meta.lanes) {
            bit<32> index = (meta.version_index << BLOCK_BITS) | (bit<32>)meta.block;
            bit<8> update = (meta.harvest == 1) ? UPDATE_READ : meta.update;
            bit<32> x = 0;
            if (value.isValid() && update != UPDATE_READ) {
                x = value.v;
            }
            bit<32> held;
            cells.read(held, index);
            if (update == UPDATE_LOAD) {
                held = x;
            } else if (update == UPDATE_ADD) {
                held = held + x;
            }
            if (update != UPDATE_READ) {
                cells.write(index, held);
            }
            bit<32> old = held - x;
            if (update == UPDATE_ADD && ((old ^ held) & (x ^ held))[31:31] == 1) {
                meta.packet_flags[0:0] = 1;     // FLAG_OVERFLOW
            }
            if (meta.keep_values == 1) {
                value.setValid();
                value.v = held;
            } else {
                value.setInvalid();
            }
        } else {
            value.setInvalid();
        }
    }
}

#endif
