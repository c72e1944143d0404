// udp_sender.p4 (TNA egress): addresses for each copy of an answer.
// Rust twin: p4/model/src/udp_sender.rs (UdpSender). A multicast replica (eg_intr_md
// .egress_rid != 0) goes to the worker lane the replica table names; a unicast answer
// goes back where it came from; what a child sends up (protocol.md §7) goes to its parent,
// whose address the ingress bridges (egress_bridge.up). A recirculating packet, a message
// punted to the controller and the controller's own answer pass untouched. The IPv4
// checksum is recomputed in the egress deparser.
#ifndef _SWITCHML_UDP_SENDER_P4_
#define _SWITCHML_UDP_SENDER_P4_

control UdpSender(inout egress_headers_t hdr, in egress_intrinsic_metadata_t eg_intr_md) {
    action set_replica(bit<48> mac, bit<32> ip, bit<16> port) {
        hdr.ethernet.dst = mac;
        hdr.ipv4.dst = ip;
        hdr.udp.dst_port = port;
    }

    table replica_table {
        key = { eg_intr_md.egress_rid : exact; }
        actions = { set_replica; NoAction; }
        default_action = NoAction();
        size = MAX_WORKERS;
    }

    apply {
        if (hdr.egress_bridge.recirculate == 1) {
            return;
        }
        if (hdr.egress_bridge.keep == 1) {
            return;                                // the controller's, as it is
        }
        if (hdr.egress_bridge.up == 1) {
            hdr.ethernet.dst = hdr.egress_bridge.parent_mac;
            hdr.ipv4.dst = hdr.egress_bridge.parent_ip;
            hdr.udp.dst_port = hdr.egress_bridge.parent_udp_port;
        } else if (eg_intr_md.egress_rid != 0) {
            replica_table.apply();
        } else {
            hdr.ethernet.dst = hdr.ethernet.src;
            hdr.ipv4.dst = hdr.ipv4.src;
            hdr.udp.dst_port = hdr.udp.src_port;
        }
        hdr.ethernet.src = hdr.egress_bridge.switch_mac;
        hdr.ipv4.src = hdr.egress_bridge.switch_ip;
        hdr.ipv4.tos = 0;
        hdr.ipv4.ident = 0;
        hdr.ipv4.flag_reserved = 0;
        hdr.ipv4.flag_df = 1;
        hdr.ipv4.flag_mf = 0;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.total_len = 28 + hdr.egress_bridge.reply_len;
        hdr.udp.src_port = SWITCHML_PORT;
        hdr.udp.length = 8 + hdr.egress_bridge.reply_len;
        hdr.udp.checksum = 0;
    }
}

#endif
