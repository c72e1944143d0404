// workers_counter.p4 (TNA): register `remaining` per slot version, the countdown.
// Rust twin: p4/model/src/workers_counter.rs (WorkersCounter). The action returns the
// count before the packet; the ingress derives complete/counted/remaining from it.
#ifndef _SWITCHML_WORKERS_COUNTER_P4_
#define _SWITCHML_WORKERS_COUNTER_P4_

control WorkersCounter(inout metadata_t meta, in bit<1> probe) {
    Register<bit<16>, bit<32>>(POOL_VERSIONS) remaining;

    // A new use starts at the world size and counts this packet at once (a new use is
    // never complete, seen, or of the wrong count).
    RegisterAction<bit<16>, bit<32>, bit<16>>(remaining) begin_use = {
        void apply(inout bit<16> value, out bit<16> before) {
            before = meta.world;
            value = meta.world - 1;
        }
    };

    RegisterAction<bit<16>, bit<32>, bit<16>>(remaining) count_down = {
        void apply(inout bit<16> value, out bit<16> before) {
            before = value;
            if (value != 0) {
                value = value - 1;
            }
        }
    };

    RegisterAction<bit<16>, bit<32>, bit<16>>(remaining) read_remaining = {
        void apply(inout bit<16> value, out bit<16> before) {
            before = value;
        }
    };

    apply {
        bit<16> before;
        if (probe == 1) {
            before = read_remaining.execute(meta.version_index);
            meta.remaining = before;
        } else {
            if (meta.begin == 1) {
                before = begin_use.execute(meta.version_index);
            } else if (meta.seen == 0 && meta.count_ok == 1) {
                before = count_down.execute(meta.version_index);
            } else {
                before = read_remaining.execute(meta.version_index);
            }
            meta.complete = 0;
            if (before == 0) {
                meta.complete = 1;
            }
            if (meta.complete == 0 && meta.seen == 0 && meta.count_ok == 1) {
                meta.counted = 1;
                meta.remaining = before - 1;
            } else {
                meta.remaining = before;
            }
        }
    }
}

#endif
