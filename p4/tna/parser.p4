// parser.p4 (TNA): the ingress parser and the egress parser.
// Rust twin: p4/model/src/parser.rs (Parser). As on v1model, plus: a packet from the
// recirculation port starts with the bridge headers (sml_bridge_h, then sml_bridge_use_h
// for a Contribution's or a Result's next pass), and every metadata field is written here
// first (Tofino does not zero metadata). Values: one block of at most VALUES_PER_PASS, by a
// chain of states (value_16 .. value_1, one value each) entered at the block's size: pass 0
// takes the first block of the packet's count, a recirculated pass the block pass 0
// planned (bridge_use.parse_lanes; 0 when it harvests). No parser counter: bf-p4c loads one
// only from a whole header field or a constant, and the chain needs neither. The rest stays
// in the payload; only one block is in the header vector (next_step_selector.p4).
#ifndef _SWITCHML_PARSER_P4_
#define _SWITCHML_PARSER_P4_

parser SwitchmlParser(packet_in packet, out headers_t hdr, out metadata_t meta,
                      out ingress_intrinsic_metadata_t ig_intr_md) {
#ifdef SWITCHML_TIERS
    ParserCounter() bitmap_left;                   // a parent's JoinReply's bitmap bytes
#endif
    // The CPU port, set by the control plane with switch_config's cpu_port (one value): what
    // comes in on it starts with the controller's packet_out header (protocol.md §4.2).
    value_set<bit<9>>(1) cpu_port;

    state start {
        packet.extract(ig_intr_md);
        packet.advance(PORT_METADATA_SIZE);
        // Every field of metadata_t (p4/model/tests/p4_files.rs checks the list).
        meta.switchml = 0;
        meta.from_cpu = 0;
        meta.to_cpu = 0;
        meta.cpu_port = 0;
        meta.parser_failed = 0;
        meta.values_left = 0;
        meta.values_parsed = 0;
        meta.message = MSG_NONE;
        meta.p_session = 0;
        meta.p_seq = 0;
        meta.p_ver = 0;
        meta.drop_reason = DROP_NONE;
        meta.verdict = VERDICT_DROP;
        meta.pass = 0;
        meta.passes = 0;
        meta.last_value_pass = 0;
        meta.blocks = 0;
        meta.parse_lanes = 0;
        meta.block = 0;
        meta.harvest = 0;
        meta.keep_values = 0;
        meta.from_parent = 0;
        meta.lookup_job = 0;
        meta.tier = TIER_FLAT;
        meta.wire_world = 0;
        meta.rank_lo = 0;
        meta.parent_job = 0;
        meta.parent_member = 0;
        meta.parent_members = 0;
        meta.parent_mac = 0;
        meta.parent_ip = 0;
        meta.parent_udp_port = 0;
        meta.parent_port = 0;
        meta.parent_session = 0;
        meta.parent_complete = 0;
        meta.parent_reject = DROP_NONE;
        meta.run_lane_slots = 0;
        meta.run_count = 0;
        meta.relayed = 0;
        meta.ask = 0;
        meta.up = 0;
        meta.job_hit = 0;
        meta.world = 0;
        meta.full_mask = 0;
        meta.slot_lo = 0;
        meta.slot_count = 0;
        meta.group = 0;
        meta.job_index = 0;
        meta.worker_hit = 0;
        meta.worker_rank = 0;
        meta.worker_member = 0;
        meta.rank_known = 0;
        meta.rank_bit = 0;
        meta.pool_slot = 0;
        meta.version_index = 0;
        meta.value_index = 0;
        meta.begin = 0;
        meta.stale = 0;
        meta.held_count = 0;
        meta.count_ok = 0;
        meta.seen = 0;
        meta.seen_set_lo = 0;
        meta.seen_set_hi = 0;
        meta.complete = 0;
        meta.counted = 0;
        meta.remaining = 0;
        meta.outcome = OUTCOME_NONE;
        meta.last = 0;
        meta.update = UPDATE_NONE;
        meta.lanes = 0;
        meta.exp = 0;
        meta.packet_flags = 0;
        meta.recirculated = 0;
        meta.ingress_port = 0;
        meta.result_flags = 0;
        meta.admitted = 0;
        meta.run_open = 0;
        meta.run_opened = 0;
        meta.run_session = 0;
        meta.shape_ok = 0;
        meta.join_shape = 0;
        meta.join_neg_nonce = 0;
        meta.run_end = 0;
        meta.run_mask_lo = 0;
        meta.run_mask_hi = 0;
        meta.parent_take = 0;
        meta.parent_mark = 0;
        meta.in_session = 0;
        meta.held_seq = 0;
        meta.seen_word = 0;
        meta.joined = 0;
        meta.join_complete = 0;
        meta.join_completes = 0;
        meta.abort_reason = 0;
        meta.abort_detail = 0;
        meta.abort_session = 0;
        meta.up_reason = 0;
        meta.up_session = 0;
        meta.up_kind = 0;
        meta.up_bridged = 0;
        meta.up_mirror = 0;
        meta.abort_own_run = 0;
        meta.echo_session = 0;
        meta.reply_len = 0;
        meta.switch_mac = 0;
        meta.switch_ip = 0;
        meta.epoch = 0;
        meta.max_count = 0;
        transition select(ig_intr_md.ingress_port) {
            RECIRCULATION_PORT: parse_bridge;
            cpu_port: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        meta.from_cpu = 1;
        transition parse_ethernet;
    }

    // A later pass: a Contribution's or a Result's (its next block of values, or nothing
    // when it harvests), or a Join's, a Leave's or a parent's Abort's that ends its job's
    // run. The packet is the one pass 0 admitted.
    state parse_bridge {
        packet.extract(hdr.bridge);
        meta.recirculated = 1;
        meta.switchml = 1;
        transition select(hdr.bridge.message) {
            MSG_CONTRIBUTION: parse_bridge_use;
            MSG_RESULT: parse_bridge_use;
            default: parse_bridged_frame;
        }
    }

    state parse_bridge_use {
        packet.extract(hdr.bridge_use);
        packet.extract(hdr.ethernet);
        packet.extract(hdr.ipv4);
        packet.extract(hdr.udp);
        packet.extract(hdr.prefix);
#ifndef SWITCHML_TIERS
        meta.lookup_job = hdr.prefix.job;          // no child_job table: the job's own id
#endif
        packet.extract(hdr.data);
        transition select(hdr.bridge_use.parse_lanes) {
            1: value_1;
            2: value_2;
            3: value_3;
            4: value_4;
            5: value_5;
            6: value_6;
            7: value_7;
            8: value_8;
            9: value_9;
            10: value_10;
            11: value_11;
            12: value_12;
            13: value_13;
            14: value_14;
            15: value_15;
            16: value_16;
            default: accept;                       // 0: a harvest pass reads its block
        }
    }

    state parse_bridged_frame {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.ipv4);
        packet.extract(hdr.udp);
        packet.extract(hdr.prefix);
#ifndef SWITCHML_TIERS
        meta.lookup_job = hdr.prefix.job;          // no child_job table: the job's own id
#endif
        transition select(hdr.bridge.message) {
            MSG_JOIN: parse_bridged_join;
            MSG_LEAVE: parse_leave;
            MSG_PARENT_ABORT: parse_abort;         // the run tracker reads its reason
            default: accept;
        }
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
#ifndef SWITCHML_TIERS
        meta.lookup_job = hdr.prefix.job;          // no child_job table: the job's own id
#endif
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

    state parse_data {
        packet.extract(hdr.data);
        transition select(hdr.data.count) {
            0: accept;
            1: value_1;
            2: value_2;
            3: value_3;
            4: value_4;
            5: value_5;
            6: value_6;
            7: value_7;
            8: value_8;
            9: value_9;
            10: value_10;
            11: value_11;
            12: value_12;
            13: value_13;
            14: value_14;
            15: value_15;
            default: value_16;                     // a full block: VALUES_PER_PASS
        }
    }

    // value_k extracts the block's last k values.
    state value_16 { packet.extract(hdr.values.next); transition value_15; }
    state value_15 { packet.extract(hdr.values.next); transition value_14; }
    state value_14 { packet.extract(hdr.values.next); transition value_13; }
    state value_13 { packet.extract(hdr.values.next); transition value_12; }
    state value_12 { packet.extract(hdr.values.next); transition value_11; }
    state value_11 { packet.extract(hdr.values.next); transition value_10; }
    state value_10 { packet.extract(hdr.values.next); transition value_9; }
    state value_9 { packet.extract(hdr.values.next); transition value_8; }
    state value_8 { packet.extract(hdr.values.next); transition value_7; }
    state value_7 { packet.extract(hdr.values.next); transition value_6; }
    state value_6 { packet.extract(hdr.values.next); transition value_5; }
    state value_5 { packet.extract(hdr.values.next); transition value_4; }
    state value_4 { packet.extract(hdr.values.next); transition value_3; }
    state value_3 { packet.extract(hdr.values.next); transition value_2; }
    state value_2 { packet.extract(hdr.values.next); transition value_1; }
    state value_1 { packet.extract(hdr.values.next); transition accept; }

    state parse_join {
        packet.extract(hdr.join);
        packet.extract(hdr.join_auth);
        transition accept;
    }

    // A parent's JoinReply (protocol.md §7): its bitmap goes into bitmap_in, which the
    // deparser never emits. More than MAX_BITMAP bytes are rejected (a parser error:
    // Malformed). The counter is Tofino's, 8 bits and signed (at most 127): it is loaded
    // from the whole bitmap_len field, masked to its low byte (max, rotate, mask, add: the
    // form bf-p4c takes), and a full bitmap's first byte is taken before a constant 127.
    // The flat build has no bitmap_in: the bitmap stays payload, and the ingress drops the
    // JoinReply as UnexpectedType.
#ifndef SWITCHML_TIERS
    state parse_join_reply {
        packet.extract(hdr.join_reply);
        transition select(hdr.join_reply.bitmap_len) {
            0 .. MAX_BITMAP: accept;
            default: reject;
        }
    }
#else
    state parse_join_reply {
        packet.extract(hdr.join_reply);
        transition select(hdr.join_reply.bitmap_len) {
            0: accept;
            1 .. (MAX_BITMAP - 1): bitmap_block;
            MAX_BITMAP: bitmap_full;
            default: reject;
        }
    }

    state bitmap_block {
        bitmap_left.set(hdr.join_reply.bitmap_len, MAX_BITMAP - 1, 0, 7, 0);
        transition parse_bitmap_in;
    }

    state bitmap_full {
        packet.extract(hdr.bitmap_in.next);
        bitmap_left.set(8w127);
        transition parse_bitmap_in;
    }

    state parse_bitmap_in {
        transition select(bitmap_left.is_zero()) {
            true: accept;
            false: parse_bitmap_byte;
        }
    }

    state parse_bitmap_byte {
        packet.extract(hdr.bitmap_in.next);
        bitmap_left.decrement(1);
        transition parse_bitmap_in;
    }
#endif

    // A restarted rank's Join in the pass that ends the run: pass 0 dropped its cookie and
    // tag (join_auth), so that its mirror, the Abort up, parses within 160 bytes.
    state parse_bridged_join {
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

// Egress parses what it rewrites and a Result's or an Up Contribution's flag byte
// (job_counters.p4's egress part), and a mirrored packet whole (the Abort up, §7); the
// rest stays payload. Everything that reaches the egress is a switchml datagram the
// ingress wrote: an answer, or a packet on its way to its next pass, which the egress
// leaves alone and so parses no further than its egress bridge header. Tofino 1 parses at
// most 160 bytes on any egress path, intrinsic metadata included (p4/README.md,
// "Resources"; model/tests/tofino_rules.rs adds them up): 120 for an answer, 140 for the
// mirror of a restarted rank's bridged Join. A message punted to the controller and the
// controller's own answer (egress_bridge.keep) are not parsed past the egress bridge; a
// child's Join up to the CPU port (egress_bridge.cpu) is, after its packet_in header.
parser SwitchmlEgressParser(packet_in packet, out egress_headers_t hdr,
                            out egress_metadata_t meta,
                            out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        packet.extract(eg_intr_md);
#ifdef SWITCHML_TIERS
        transition select(packet.lookahead<bit<4>>()) {
            0xF: parse_up_mirror;                  // a mirror header's kind (§7)
            default: parse_egress_bridge;
        }
#else
        transition parse_egress_bridge;            // no mirror: nothing goes up
#endif
    }

    state parse_egress_bridge {
        packet.extract(hdr.egress_bridge);
        transition select(hdr.egress_bridge.recirculate, hdr.egress_bridge.keep,
                          hdr.egress_bridge.cpu) {
            (1, _, _): accept;                     // its bridge headers stay payload
            (_, 1, _): accept;                     // the controller's, as it is
#ifdef SWITCHML_TIERS
            (_, _, 1): parse_packet_in;            // a child's Join up, for the controller
#endif
            default: parse_ethernet;
        }
    }

#ifdef SWITCHML_TIERS
    // A child's Join up (§7): addressed in the egress as anything going up, then its
    // controller signs it (protocol.md §4.2). Its Join header stays payload.
    state parse_packet_in {
        packet.extract(hdr.packet_in);
        packet.extract(hdr.ethernet);
        packet.extract(hdr.ipv4);
        packet.extract(hdr.udp);
        packet.extract(hdr.prefix);
        transition accept;
    }
#endif

#ifdef SWITCHML_TIERS
    // The packet that ended a child's run, mirrored: a worker's Abort, or a restarted
    // rank's Join in its second pass (after its bridge header, which for a Join is
    // sml_bridge_h alone). The egress writes the Abort up over it, so its header is parsed
    // whole.
    state parse_up_mirror {
        packet.extract(hdr.up_mirror);
        transition select(hdr.up_mirror.bridged) {
            1: parse_up_bridge;
            default: parse_up_ethernet;
        }
    }

    state parse_up_bridge {
        packet.extract(hdr.bridge);
        transition parse_up_ethernet;
    }

    state parse_up_ethernet {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.ipv4);
        packet.extract(hdr.udp);
        packet.extract(hdr.prefix);
        transition select(hdr.prefix.msg_type) {
            TYPE_JOIN: parse_up_join;
            default: parse_up_abort;
        }
    }

    state parse_up_join {
        packet.extract(hdr.join);
        transition accept;
    }

    state parse_up_abort {
        packet.extract(hdr.abort);
        transition accept;
    }
#endif

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.ipv4);
        packet.extract(hdr.udp);
        packet.extract(hdr.prefix);
        transition select(hdr.prefix.msg_type) {
            TYPE_RESULT: parse_result;
            TYPE_CONTRIBUTION: parse_result;       // a child's use going up (§7)
            default: accept;
        }
    }

    state parse_result {
        packet.extract(hdr.data);
        transition accept;
    }
}

#endif
