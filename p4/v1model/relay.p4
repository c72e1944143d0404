// relay.p4 (v1model): register `relay` per slot version, {relayed:1, resends:16} in 32 bits:
// what a child switch (protocol.md §7) knows of a use it sent up. Rust twin:
// p4/model/src/relay.rs (Relay). A new use resets it; a resend to a use complete here
// (meta.complete, meta.count_ok) whose parent's Result has not come back counts, and the
// first of every `world` (the child's ranks) goes up again (meta.ask); a parent's Result
// for the use (store == 1: ParentResult's checks passed and the use is held complete with
// its count) sets `relayed`, and meta.relayed says whether it already was (a duplicate).
// Flat and parent jobs only reset it.
#ifndef _SWITCHML_RELAY_P4_
#define _SWITCHML_RELAY_P4_

control Relay(inout metadata_t meta, in bit<1> store) {
    register<bit<32>>(POOL_VERSIONS) relay;

    apply {
        bit<32> cell;
        relay.read(cell, meta.version_index);
        if (meta.begin == 1) {
            cell = 0;
        }
        bit<1> relayed = cell[31:31];
        bit<16> resends = cell[15:0];
        meta.relayed = relayed;
        meta.ask = 0;
        if (store == 1) {
            relayed = 1;
        } else if (meta.complete == 1 && meta.count_ok == 1 && relayed == 0) {
            meta.ask = (resends == 0) ? 1w1 : 1w0;
            resends = (resends + 1 >= meta.world) ? 16w0 : resends + 1;
        }
        relay.write(meta.version_index, relayed ++ 15w0 ++ resends);
    }
}

#endif
