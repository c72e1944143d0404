// processor.p4 (TNA): one value register and its three RegisterActions; processors.p4
// (generated) has 64. Rust twin: p4/model/src/processor.rs (Processor). The action
// returns the new value; overflow follows from old = new - x, so one output suffices.
#ifndef _SWITCHML_PROCESSOR_P4_
#define _SWITCHML_PROCESSOR_P4_

control Processor(inout value_h value, inout metadata_t meta, in bit<8> lane) {
    Register<bit<32>, bit<32>>(POOL_VALUE_CELLS) cells;

    RegisterAction<bit<32>, bit<32>, bit<32>>(cells) load = {
        void apply(inout bit<32> held, out bit<32> sum) {
            held = value.v;
            sum = held;
        }
    };

    RegisterAction<bit<32>, bit<32>, bit<32>>(cells) add = {
        void apply(inout bit<32> held, out bit<32> sum) {
            held = held + value.v;
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
            bit<32> index = (meta.version_index << 2) | (bit<32>)meta.pass[1:0];
            bit<32> x = value.v;
            bit<32> sum;
            if (meta.update == UPDATE_LOAD) {
                sum = load.execute(index);
            } else if (meta.update == UPDATE_ADD) {
                sum = add.execute(index);
                bit<32> old = sum - x;
                if (((old ^ sum) & (x ^ sum))[31:31] == 1) {
                    meta.packet_overflow = 1;
                }
            } else {
                sum = read.execute(index);
            }
            value.setValid();
            value.v = sum;
        } else {
            value.setInvalid();
        }
    }
}

#endif
