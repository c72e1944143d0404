// congestion_marker.p4 (v1model egress): mark a Result CONGESTED when the queue of the port
// it leaves by was deep (protocol.md §6.3). Rust twin: p4/model/src/congestion_marker.rs
// (CongestionMarker). The depth is standard_metadata.enq_qdepth, the egress queue's depth
// when this copy was enqueued, in packets on BMv2 (a queue holds 64 unless
// `set_queue_depth` says otherwise); the threshold is the default action's parameter of
// table congestion_threshold, set by the control plane (`table_set_default
// congestion_threshold set_threshold 16`); 0, the default, never marks.
//
// Only a data Result is marked: JoinReplies, ProbeReplies and Aborts carry no CONGESTED
// bit, a Contribution going up to a parent (§7) is not a Result, and what is recirculated
// or goes to the controller does not reach this control (switchml.p4). Each replica of a
// multicast Result is marked by the depth of its own port, so a rank behind a deep queue
// gets its copy marked and the others do not. That is sound: the bit is outside the
// values (the sum every rank takes is the same), and a rank reacts to its own copy by
// halving its own window, which paces the whole job, since a use completes only when every
// rank has sent it. The UDP checksum is 0 (udp_sender.p4), so the flag needs no checksum
// update.
#ifndef _SWITCHML_CONGESTION_MARKER_P4_
#define _SWITCHML_CONGESTION_MARKER_P4_

control CongestionMarker(inout headers_t hdr, in standard_metadata_t standard_metadata) {
    bit<19> threshold = 0;

    action set_threshold(bit<19> depth) {
        threshold = depth;
    }

    table congestion_threshold {
        actions = { set_threshold; }
        default_action = set_threshold(0);
    }

    apply {
        congestion_threshold.apply();
        if (hdr.data.isValid() && hdr.prefix.msg_type == TYPE_RESULT && threshold != 0
                && standard_metadata.enq_qdepth > threshold) {
            hdr.data.flags = hdr.data.flags | FLAG_CONGESTED;
        }
    }
}

#endif
