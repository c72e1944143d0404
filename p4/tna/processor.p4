// processor.p4 (TNA): one value register and its three RegisterActions; processors.p4
// (generated) has VALUES_PER_PASS, one per lane (the constructor argument). Rust twin:
// p4/model/src/processor.rs (Processor). The cell is the slot version's for the block this
// pass handles (next_step_selector.p4; a harvest pass reads). The action returns the new
// value; overflow follows from old = new - x, so one output suffices. The addend is the
// lane's value, hdr.values[lane].v, read only where the lane is in the block (so the header
// is valid) and only as a field of the pipeline's headers: p4test reads a control's local
// or a copied argument in a RegisterAction as uninitialised.
#ifndef _SWITCHML_PROCESSOR_P4_
#define _SWITCHML_PROCESSOR_P4_

control Processor(inout headers_t hdr, inout metadata_t meta)(bit<8> lane) {
    Register<bit<32>, bit<32>>(POOL_VALUE_CELLS) cells;

    RegisterAction<bit<32>, bit<32>, bit<32>>(cells) load = {
        void apply(inout bit<32> held, out bit<32> sum) {
            held = hdr.values[lane].v;
            sum = held;
        }
    };

    RegisterAction<bit<32>, bit<32>, bit<32>>(cells) add = {
        void apply(inout bit<32> held, out bit<32> sum) {
            held = held + hdr.values[lane].v;
            sum = held;
        }
    };

    RegisterAction<bit<32>, bit<32>, bit<32>>(cells) read = {
        void apply(inout bit<32> held, out bit<32> sum) {
            sum = held;
        }
    };

    apply {
        if (lane < meta.lanes) {
            bit<32> index = (meta.version_index << BLOCK_BITS) | (bit<32>)meta.block[3:0];
            bit<32> sum;
            if (meta.harvest == 0 && meta.update == UPDATE_LOAD) {
                sum = load.execute(index);
            } else if (meta.harvest == 0 && meta.update == UPDATE_ADD) {
                sum = add.execute(index);
                bit<32> addend = hdr.values[lane].v;
                bit<32> old = sum - addend;
                if (((old ^ sum) & (addend ^ sum))[31:31] == 1) {
                    meta.packet_flags[0:0] = 1;     // FLAG_OVERFLOW
                }
            } else {
                sum = read.execute(index);
            }
            if (meta.keep_values == 1) {
                hdr.values[lane].setValid();
                hdr.values[lane].v = sum;
            } else {
                hdr.values[lane].setInvalid();
            }
        } else {
            hdr.values[lane].setInvalid();
        }
    }
}

#endif
