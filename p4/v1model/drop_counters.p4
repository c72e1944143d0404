// drop_counters.p4 (v1model): switch-wide packet counters; drops by reason in the order of
// switchml_core::switch::DropReason::ALL. Rust twin: p4/model/src/drop_counters.rs
// (DropCounters), read as the reference switch's Counters.
#ifndef _SWITCHML_DROP_COUNTERS_P4_
#define _SWITCHML_DROP_COUNTERS_P4_

control DropCounters(in metadata_t meta) {
    counter(1, CounterType.packets) received;
    // consumed, multicast, unicast, up (§7), to the controller (§4.2)
    counter(5, CounterType.packets) outcomes;
    counter(DROP_CLASSES, CounterType.packets) drops;
    counter(1, CounterType.packets) ignored;
    counter(1, CounterType.packets) recirculations;    // one per later pass
    counter(1, CounterType.packets) aborts_up;         // clones: a child's Abort up (§7)

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
                drops.count((bit<32>)meta.drop_reason);
            } else if (meta.verdict == VERDICT_CONSUME) {
                outcomes.count(0);
            } else if (meta.verdict == VERDICT_MULTICAST) {
                outcomes.count(1);
            } else if (meta.verdict == VERDICT_UNICAST) {
                outcomes.count(2);
            } else if (meta.verdict == VERDICT_UP) {
                outcomes.count(3);
            } else if (meta.verdict == VERDICT_TO_CPU) {
                outcomes.count(4);
            }
            // The clone a child's run's end sends up (§7): the controller adds it to
            // `outcomes` up, as the reference counts it (upward).
            if (meta.up_reason != 0) {
                aborts_up.count(0);
            }
        }
    }
}

#endif
