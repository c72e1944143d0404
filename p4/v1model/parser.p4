// parser.p4 (v1model): Ethernet -> IPv4 -> UDP to 0xBEE0 -> prefix -> the header its type
// selects -> one block of values (a Contribution's, or a parent's Result's at a child
// switch, protocol.md §7), or a parent's JoinReply's bitmap. Rust twin: p4/model/src/parser.rs (Parser).
// A header that runs past the packet sets standard_metadata.parser_error; the ingress turns
// that into meta.parser_failed and the validator into a Malformed drop. A count above 256
// is dropped as CountTooLarge in pass 0. The parser writes the program's metadata in
// `v1.sml` (v1model_metadata_t, switchml.p4). A frame on the CPU port starts with the
// controller's packet_out header.
#ifndef _SWITCHML_PARSER_P4_
#define _SWITCHML_PARSER_P4_

parser SwitchmlParser(packet_in packet, out headers_t hdr, inout v1model_metadata_t v1,
                      inout standard_metadata_t standard_metadata) {
    // What comes in on the CPU port is the controller's: a packet_out header, then the frame
    // (protocol.md §4.2; p4/README.md, "Joins and the controller").
    // A recirculated pass is never the controller's (BMv2 zeroes its ingress_port anyway).
    state start {
        transition select(standard_metadata.instance_type, standard_metadata.ingress_port) {
            (PKT_INSTANCE_TYPE_INGRESS_RECIRC, _): parse_ethernet;
            (_, CPU_PORT): parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        v1.sml.from_cpu = 1;
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
        v1.sml.switchml = 1;
        packet.extract(hdr.prefix);
        transition select(hdr.prefix.version, hdr.prefix.msg_type) {
            (PROTOCOL_VERSION, TYPE_CONTRIBUTION): parse_data;
            (PROTOCOL_VERSION, TYPE_RESULT): parse_data;
            (PROTOCOL_VERSION, TYPE_JOIN): parse_join;
            (PROTOCOL_VERSION, TYPE_JOIN_REPLY): parse_join_reply;
            (PROTOCOL_VERSION, TYPE_PROBE): parse_probe;
            (PROTOCOL_VERSION, TYPE_ABORT): parse_abort;
            (PROTOCOL_VERSION, TYPE_STATUS): parse_status;
            (PROTOCOL_VERSION, TYPE_LEAVE): parse_leave;
            default: accept;
        }
    }

    // The values: one block of at most VALUES_PER_PASS, counted with metadata (BMv2 takes
    // only fields as select keys). Pass 0 takes the first block of the packet's count; a
    // recirculated pass the block pass 0 planned (v1.sml.parse_lanes, preserved), 0 when it
    // harvests. Further values stay in the payload for later passes.
    state parse_data {
        packet.extract(hdr.data);
        v1.sml.values_parsed = 0;
        v1.sml.values_left = hdr.data.count;
        transition select(standard_metadata.instance_type) {
            PKT_INSTANCE_TYPE_INGRESS_RECIRC: parse_planned_block;
            default: parse_values;
        }
    }

    state parse_planned_block {
        v1.sml.values_left = (bit<16>)v1.sml.parse_lanes;
        transition parse_values;
    }

    state parse_values {
        transition select(v1.sml.values_left, v1.sml.values_parsed) {
            (0, _): accept;
            (_, VALUES_PER_PASS): accept;
            default: parse_value;
        }
    }

    state parse_value {
        packet.extract(hdr.values.next);
        v1.sml.values_left = v1.sml.values_left - 1;
        v1.sml.values_parsed = v1.sml.values_parsed + 1;
        transition parse_values;
    }

    state parse_join {
        packet.extract(hdr.join);
        packet.extract(hdr.join_auth);
        transition accept;
    }

    // A parent's JoinReply (protocol.md §7): its bitmap is extracted into bitmap_in, which
    // the deparser never emits, so the child's answer does not carry it. Counted with
    // metadata as the values are; more than MAX_BITMAP bytes fail the parse (Malformed).
    state parse_join_reply {
        packet.extract(hdr.join_reply);
        v1.sml.values_left = hdr.join_reply.bitmap_len;
        transition parse_bitmap_in;
    }

    state parse_bitmap_in {
        transition select(v1.sml.values_left) {
            0: accept;
            default: parse_bitmap_byte;
        }
    }

    state parse_bitmap_byte {
        packet.extract(hdr.bitmap_in.next);
        v1.sml.values_left = v1.sml.values_left - 1;
        transition parse_bitmap_in;
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
