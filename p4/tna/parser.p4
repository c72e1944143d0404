// parser.p4 (TNA): the ingress parser and the egress parser.
// Rust twin: p4/model/src/parser.rs (Parser). As on v1model, plus: a packet from the
// recirculation port starts with the bridge header (sml_bridge_h). Values are extracted
// block by block: full blocks loop on the stack's lastIndex, the partial last block on a
// ParserCounter set to count mod 64 (Tofino's parser counter is 8 bits wide).
#ifndef _SWITCHML_PARSER_P4_
#define _SWITCHML_PARSER_P4_

parser SwitchmlParser(packet_in packet, out headers_t hdr, out metadata_t meta,
                      out ingress_intrinsic_metadata_t ig_intr_md) {
    ParserCounter() values_left;

    state start {
        packet.extract(ig_intr_md);
        packet.advance(PORT_METADATA_SIZE);
        // Metadata starts zeroed (@pa_auto_init_metadata in switchml.p4).
        transition select(ig_intr_md.ingress_port) {
            RECIRCULATION_PORT: parse_bridge;
            default: parse_ethernet;
        }
    }

    state parse_bridge {
        packet.extract(hdr.bridge);
        meta.recirculated = 1;
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.version_ihl, hdr.ipv4.flag_mf, hdr.ipv4.frag_offset,
                          hdr.ipv4.protocol) {
            (0x45, 0, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            SWITCHML_PORT: parse_prefix;
            default: accept;
        }
    }

    state parse_prefix {
        meta.switchml = 1;
        packet.extract(hdr.prefix);
        transition select(hdr.prefix.version, hdr.prefix.msg_type) {
            (PROTOCOL_VERSION, TYPE_CONTRIBUTION): parse_data;
            (PROTOCOL_VERSION, TYPE_JOIN): parse_join;
            (PROTOCOL_VERSION, TYPE_PROBE): parse_probe;
            (PROTOCOL_VERSION, TYPE_ABORT): parse_abort;
            (PROTOCOL_VERSION, TYPE_STATUS): parse_status;
            (PROTOCOL_VERSION, TYPE_LEAVE): parse_leave;
            default: accept;
        }
    }

    state parse_data {
        packet.extract(hdr.data);
        transition select(hdr.data.count) {
            0: accept;
            1 .. 63: part_block0;
            64: full_block0_last;
            default: full_block0;
        }
    }

    // Block 0.
    state full_block0 {
        packet.extract(hdr.block0.next);
        transition select(hdr.block0.lastIndex) {
            63: after_block0;
            default: full_block0;
        }
    }
    state full_block0_last {
        packet.extract(hdr.block0.next);
        transition select(hdr.block0.lastIndex) {
            63: accept;
            default: full_block0_last;
        }
    }
    state part_block0 {
        values_left.set(hdr.data.count[5:0]);
        transition part_block0_loop;
    }
    state part_block0_loop {
        packet.extract(hdr.block0.next);
        values_left.decrement(1);
        transition select(values_left.is_zero()) {
            true: accept;
            false: part_block0_loop;
        }
    }
    state after_block0 {
        transition select(hdr.data.count) {
            65 .. 127: part_block1;
            128: full_block1_last;
            default: full_block1;
        }
    }

    // Block 1.
    state full_block1 {
        packet.extract(hdr.block1.next);
        transition select(hdr.block1.lastIndex) {
            63: after_block1;
            default: full_block1;
        }
    }
    state full_block1_last {
        packet.extract(hdr.block1.next);
        transition select(hdr.block1.lastIndex) {
            63: accept;
            default: full_block1_last;
        }
    }
    state part_block1 {
        values_left.set(hdr.data.count[5:0]);
        transition part_block1_loop;
    }
    state part_block1_loop {
        packet.extract(hdr.block1.next);
        values_left.decrement(1);
        transition select(values_left.is_zero()) {
            true: accept;
            false: part_block1_loop;
        }
    }
    state after_block1 {
        transition select(hdr.data.count) {
            129 .. 191: part_block2;
            192: full_block2_last;
            default: full_block2;
        }
    }

    // Block 2.
    state full_block2 {
        packet.extract(hdr.block2.next);
        transition select(hdr.block2.lastIndex) {
            63: after_block2;
            default: full_block2;
        }
    }
    state full_block2_last {
        packet.extract(hdr.block2.next);
        transition select(hdr.block2.lastIndex) {
            63: accept;
            default: full_block2_last;
        }
    }
    state part_block2 {
        values_left.set(hdr.data.count[5:0]);
        transition part_block2_loop;
    }
    state part_block2_loop {
        packet.extract(hdr.block2.next);
        values_left.decrement(1);
        transition select(values_left.is_zero()) {
            true: accept;
            false: part_block2_loop;
        }
    }
    state after_block2 {
        transition select(hdr.data.count) {
            193 .. 255: part_block3;
            default: full_block3;
        }
    }

    // Block 3: a count above 256 leaves the rest in the payload (CountTooLarge).
    state full_block3 {
        packet.extract(hdr.block3.next);
        transition select(hdr.block3.lastIndex) {
            63: accept;
            default: full_block3;
        }
    }
    state part_block3 {
        values_left.set(hdr.data.count[5:0]);
        transition part_block3_loop;
    }
    state part_block3_loop {
        packet.extract(hdr.block3.next);
        values_left.decrement(1);
        transition select(values_left.is_zero()) {
            true: accept;
            false: part_block3_loop;
        }
    }

    state parse_join {
        packet.extract(hdr.join);
        transition accept;
    }

    state parse_probe {
        packet.extract(hdr.probe);
        transition accept;
    }

    state parse_abort {
        packet.extract(hdr.abort);
        transition accept;
    }

    state parse_status {
        packet.extract(hdr.status);
        transition accept;
    }

    state parse_leave {
        packet.extract(hdr.leave);
        transition accept;
    }
}

// Egress parses only what it rewrites; the rest stays payload.
parser SwitchmlEgressParser(packet_in packet, out egress_headers_t hdr,
                            out egress_metadata_t meta,
                            out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        packet.extract(eg_intr_md);
        packet.extract(hdr.egress_bridge);
        transition select(hdr.egress_bridge.recirculate) {
            1: parse_bridge;
            default: parse_ethernet;
        }
    }

    state parse_bridge {
        packet.extract(hdr.bridge);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.ipv4);
        packet.extract(hdr.udp);
        transition accept;
    }
}

#endif
