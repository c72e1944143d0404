// congestion_marker.p4 (TNA egress): mark a Result CONGESTED when the queue of the port it
// leaves by was deep (protocol.md §6.3). Rust twin: p4/model/src/congestion_marker.rs
// (CongestionMarker). The depth is eg_intr_md.enq_qdepth, the egress queue's depth when
// this copy was enqueued, in 80-byte cells on Tofino 1; the threshold is the default
// action's parameter of table congestion_threshold, set by the control plane (BfRt: the
// table's default entry, set_threshold(depth)); 0, the default, never marks.
//
// Only a data Result is marked: the egress parser extracts `data` for a Result or a
// Contribution going up (§7) only, and nothing that recirculates or that the controller
// sends or gets is parsed that far (parser.p4). Each replica of a multicast Result is
// marked by the depth of its own port, so a rank behind a deep queue gets its copy marked
// and the others do not. That is sound: the bit is outside the values (the sum every rank
// takes is the same), and a rank reacts to its own copy by halving its own window, which
// paces the whole job, since a use completes only when every rank has sent it. The UDP
// checksum is 0 (udp_sender.p4), so the flag needs no checksum update.
//
// No register and no parser state: one keyless table, a subtraction and two gateways. A
// Tofino gateway compares a field with a constant, so `depth > threshold` is the sign of
// threshold − depth, a subtraction in 20 bits (both are below 2^19); no gateway row
// negates a comparison ("gateway condition too complex", p4/README.md).
#ifndef _SWITCHML_CONGESTION_MARKER_P4_
#define _SWITCHML_CONGESTION_MARKER_P4_

control CongestionMarker(inout egress_headers_t hdr, in egress_intrinsic_metadata_t eg_intr_md) {
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
        bit<20> below = (bit<20>)threshold - (bit<20>)eg_intr_md.enq_qdepth;
        bit<1> deep = below[19:19];
        if (threshold == 0) {
            deep = 0;
        }
        if (hdr.data.isValid()) {
            if (hdr.prefix.msg_type == TYPE_RESULT && deep == 1) {
                hdr.data.flags = hdr.data.flags | FLAG_CONGESTED;
            }
        }
    }
}

#endif
