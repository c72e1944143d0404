// parser.p4 (v1model): Ethernet -> IPv4 -> UDP to 0xBEE0 -> prefix -> the header its type
// selects -> up to 4 x 64 values. Rust twin: p4/model/src/parser.rs (Parser).
// A header that runs past the packet sets standard_metadata.parser_error; the ingress turns
// that into meta.parser_failed and the validator into a Malformed drop. Values beyond 256
// stay in the payload (the count check drops such a packet as CountTooLarge).
#ifndef _SWITCHML_PARSER_P4_
#define _SWITCHML_PARSER_P4_

parser SwitchmlParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    state start {
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
        meta.values_left = hdr.data.count;
        transition select(hdr.data.count) {
            0: accept;
            default: parse_block0;
        }
    }

    state parse_block0 {
        packet.extract(hdr.block0.next);
        meta.values_left = meta.values_left - 1;
        transition select(meta.values_left, hdr.block0.lastIndex) {
            (0, _): accept;
            (_, 63): parse_block1;
            default: parse_block0;
        }
    }

    state parse_block1 {
        packet.extract(hdr.block1.next);
        meta.values_left = meta.values_left - 1;
        transition select(meta.values_left, hdr.block1.lastIndex) {
            (0, _): accept;
            (_, 63): parse_block2;
            default: parse_block1;
        }
    }

    state parse_block2 {
        packet.extract(hdr.block2.next);
        meta.values_left = meta.values_left - 1;
        transition select(meta.values_left, hdr.block2.lastIndex) {
            (0, _): accept;
            (_, 63): parse_block3;
            default: parse_block2;
        }
    }

    state parse_block3 {
        packet.extract(hdr.block3.next);
        meta.values_left = meta.values_left - 1;
        transition select(meta.values_left, hdr.block3.lastIndex) {
            (0, _): accept;
            (_, 63): accept;
            default: parse_block3;
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

#endif
