// udp_sender.p4 (v1model egress): addresses for each copy of an answer.
// Rust twin: p4/model/src/udp_sender.rs (UdpSender). A multicast replica (egress_rid != 0)
// goes to the worker lane the replica table names; a unicast answer goes back where it
// came from; what a child sends up (protocol.md §7) goes to its parent, whose address is
// table parent_link's (tier_selector.p4). The switchml bytes are the same in every replica (rank 0xFFFF on a multicast
// Result); only addresses and lengths change. UDP checksum 0; IPv4 checksum in
// SwitchmlComputeChecksum.
#ifndef _SWITCHML_UDP_SENDER_P4_
#define _SWITCHML_UDP_SENDER_P4_

control UdpSender(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action set_replica(bit<48> mac, bit<32> ip, bit<16> port) {
        hdr.ethernet.dst = mac;
        hdr.ipv4.dst = ip;
        hdr.udp.dst_port = port;
    }

    table replica_table {
        key = { standard_metadata.egress_rid : exact; }
        actions = { set_replica; NoAction; }
        default_action = NoAction();
        size = MAX_WORKERS;
    }

    apply {
        if (meta.verdict == VERDICT_UP) {
            hdr.ethernet.dst = meta.parent_mac;
            hdr.ipv4.dst = meta.parent_ip;
            hdr.udp.dst_port = meta.parent_udp_port;
        } else if (standard_metadata.egress_rid != 0) {
            replica_table.apply();
        } else {
            hdr.ethernet.dst = hdr.ethernet.src;
            hdr.ipv4.dst = hdr.ipv4.src;
            hdr.udp.dst_port = hdr.udp.src_port;
        }
        hdr.ethernet.src = meta.switch_mac;
        hdr.ipv4.src = meta.switch_ip;
        hdr.ipv4.tos = 0;
        hdr.ipv4.ident = 0;
        hdr.ipv4.flag_reserved = 0;
        hdr.ipv4.flag_df = 1;
        hdr.ipv4.flag_mf = 0;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.total_len = 28 + meta.reply_len;
        hdr.udp.src_port = SWITCHML_PORT;
        hdr.udp.length = 8 + meta.reply_len;
        hdr.udp.checksum = 0;
    }
}

#endif
