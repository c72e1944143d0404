// workers_counter.p4 (v1model): register `remaining` per slot version, the countdown of
// missing contributions. Rust twin: p4/model/src/workers_counter.rs (WorkersCounter).
#ifndef _SWITCHML_WORKERS_COUNTER_P4_
#define _SWITCHML_WORKERS_COUNTER_P4_

control WorkersCounter(inout metadata_t meta, in bit<1> probe) {
    register<bit<16>>(POOL_VERSIONS) remaining;

    apply {
        bit<16> left;
        remaining.read(left, meta.version_index);
        if (probe == 0) {
            if (meta.begin == 1) {
                left = meta.world;
            }
            meta.complete = (left == 0) ? 1w1 : 1w0;
            if (meta.complete == 0 && meta.seen == 0 && meta.count_ok == 1) {
                meta.counted = 1;
                left = left - 1;
            }
            if (meta.begin == 1 || meta.counted == 1) {
                remaining.write(meta.version_index, left);
            }
        }
        meta.remaining = left;
    }
}

#endif
