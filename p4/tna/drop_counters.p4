// drop_counters.p4 (TNA): switch-wide packet counters; drops by reason in the order of
// switchml_core::switch::DropReason::ALL. Rust twin: p4/model/src/drop_counters.rs
// (DropCounters). `aborts_up` is the tiered build's only (switchml.p4, SWITCHML_TIERS).
#ifndef _SWITCHML_DROP_COUNTERS_P4_
#define _SWITCHML_DROP_COUNTERS_P4_

control DropCounters(in metadata_t meta) {
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) received;
    // consumed, multicast, unicast, up (§7), to the controller (§4.2)
    Counter<bit<64>, bit<3>>(5, CounterType_t.PACKETS) outcomes;
    Counter<bit<64>, bit<8>>(DROP_CLASSES, CounterType_t.PACKETS) drops;
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) ignored;
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) recirculations;
#ifdef SWITCHML_TIERS
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) aborts_up;   // mirrors: a child's Abort up (§7)
#endif

    apply {
        if (meta.verdict == VERDICT_FORWARD) {
            // The controller's answer: it counted what it answered.
        } else if (meta.switchml == 0) {
            ignored.count(0);
        } else {
            // Every datagram once, in its first pass, whatever becomes of it; a Join the
            // controller sends back was counted when it came in.
            if (meta.pass == 0 && meta.from_cpu == 0) {
                received.count(0);
            }
            if (meta.verdict == VERDICT_RECIRCULATE) {
                recirculations.count(0);
            } else if (meta.verdict == VERDICT_DROP) {
                drops.count(meta.drop_reason);
            } else if (meta.verdict == VERDICT_CONSUME) {
                outcomes.count(0);
            } else if (meta.verdict == VERDICT_MULTICAST) {
                outcomes.count(1);
            } else if (meta.verdict == VERDICT_UNICAST) {
                outcomes.count(2);
            } else if (meta.verdict == VERDICT_UP && meta.parent_session == 0) {
                outcomes.count(0);      // a completion with no parent session yet: the egress
                                        // counts its overflow and drops it (switchml.p4)
            } else if (meta.verdict == VERDICT_UP) {
                outcomes.count(3);
            } else if (meta.verdict == VERDICT_TO_CPU) {
                outcomes.count(4);
            }
#ifdef SWITCHML_TIERS
            // The mirror a child's run's end sends up (§7): the controller adds it to
            // `outcomes` up, as the reference counts it (upward).
            if (meta.up_reason != 0) {
                aborts_up.count(0);
            }
#endif
        }
    }
}

#endif
