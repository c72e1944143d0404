// switchml.p4 (TNA, Tofino): the switchml-rs switch, docs/protocol.md §4, with the same
// controls as p4/v1model/ in TNA idioms (Register/RegisterAction, Counter, the traffic
// manager's intrinsic metadata). Rust twin of this orchestration:
// p4/model/src/pipeline.rs (Pipeline). Compile (SDE):
//   bf-p4c --std p4-16 --target tofino --arch tna -I ../include -o build switchml.p4
// That is the flat build: one level of switches (protocol.md §4), the layout that fits one
// Tofino 1 pipe by p4/README.md's arithmetic. Two-level aggregation (§7: tables child_job
// and parent_link, registers relay and the run tracker's parent, a parent's messages, what
// goes up) is the tiered build, which does not fit 12 stages with 16 values per pass
// (p4/README.md, "With two levels"):
//   bf-p4c --std p4-16 --target tofino --arch tna -DSWITCHML_TIERS -I ../include -o build switchml.p4
// The flat build has no tier tables: a control plane cannot install a parent or a child
// job in it. It behaves as the tiered build with no parent_link or child_job entry (every
// job flat, a Result or JoinReply UnexpectedType), which the Rust model models.
// Every control, and so every register, is applied from one place, at most once per pass;
// the resources it needs per stage are in p4/README.md ("Resources").
#include <core.p4>
#include <tna.p4>

#include "../include/headers.p4"

// The recirculation port of pipe 0 (Tofino 1: 68); a later pass enters through it.
const PortId_t RECIRCULATION_PORT = 68;
#ifdef SWITCHML_TIERS
// Tiered build: the Abort a child owes its parent (§7) leaves as an ingress mirror:
// mirror type 1, session UP_MIRROR_BASE + the job table entry, which the controller maps
// to the parent's port with the job's parent_link entry.
const MirrorType_t MIRROR_TYPE_UP = 1;
const bit<10> UP_MIRROR_BASE = 512;
#endif

struct egress_headers_t {
#ifdef SWITCHML_TIERS
    sml_up_mirror_h     up_mirror;              // never sent (invalid by the deparser)
#endif
    sml_egress_bridge_h egress_bridge;
#ifdef SWITCHML_TIERS
    sml_bridge_h        bridge;                 // a mirrored Join's (the Abort up, §7)
#endif
    packet_in_h         packet_in;              // a child's Join up, to the CPU port (§4.2)
    ethernet_h          ethernet;
    ipv4_h              ipv4;
    udp_h               udp;
    sml_prefix_h        prefix;                 // parsed to find a Result's flag byte
    sml_data_h          data;                   // a Result's (job_counters.p4, egress)
    sml_join_h          join;                   // a mirrored Join (the Abort up, §7)
    sml_abort_h         abort;                  // a mirrored Abort, or the Abort up
}

struct egress_metadata_t {
}

#include "parser.p4"
#include "../include/validator.p4"
#ifdef SWITCHML_TIERS
#include "../include/tier_selector.p4"
#endif
#include "../include/classifier.p4"
#ifdef SWITCHML_TIERS
#include "../include/parent_result.p4"
#endif
#include "use_checker.p4"
#include "count_checker.p4"
#include "bitmap_checker.p4"
#include "workers_counter.p4"
#ifdef SWITCHML_TIERS
#include "relay.p4"
#endif
#include "../include/next_step_selector.p4"
#include "exponents.p4"
#include "processors.p4"
#include "overflow_flag.p4"
#include "join_handler.p4"
#include "run_tracker.p4"
#include "../include/probe_handler.p4"
#include "../include/bitmap_writer.p4"
#include "../include/reply_builder.p4"
#include "drop_counters.p4"
#include "job_counters.p4"
#include "udp_sender.p4"
#include "congestion_marker.p4"

control SwitchmlIngress(inout headers_t hdr, inout metadata_t meta,
                        in ingress_intrinsic_metadata_t ig_intr_md,
                        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Validator() validator;
#ifdef SWITCHML_TIERS
    TierSelector() tier_selector;
#endif
    Classifier() classifier;
#ifdef SWITCHML_TIERS
    ParentResult() parent_result;
#endif
    UseChecker() use_checker;
    CountChecker() count_checker;
    BitmapChecker() bitmap_checker;
    WorkersCounter() workers_counter;
#ifdef SWITCHML_TIERS
    Relay() relay;
#endif
    NextStepSelector() next_step_selector;
    Exponents() exponents;
    Processors() processors;
    OverflowFlag() overflow_flag;
    JoinHandler() join_handler;
    RunTracker() run_tracker;
    ProbeHandler() probe_handler;
    ReplyBuilder() reply_builder;
    DropCounters() drop_counters;
    JobCounters() job_counters;

    // The switch's addresses, its epoch, the largest count it accepts (the model's Config; a
    // max_count above MAX_COUNT, what the registers hold, is taken as MAX_COUNT) and the CPU
    // port (the controller's; the parser's value set `cpu_port` holds the same port).
    action set_switch_config(bit<48> mac, bit<32> ip, bit<32> epoch, bit<16> max_count,
                             bit<9> cpu_port) {
        meta.switch_mac = mac;
        meta.switch_ip = ip;
        meta.epoch = epoch;
        meta.max_count = (max_count > MAX_COUNT) ? MAX_COUNT : max_count;
        meta.cpu_port = cpu_port;
    }

    table switch_config {
        actions = { set_switch_config; }
        default_action = set_switch_config(0, 0, 0, MAX_COUNT, 0);
    }

    apply {
        // From the controller (protocol.md §4.2): its own answer, out of the port it names
        // as it is, or an admitted Join, taken as from the port it came in on.
        bit<1> forward = 0;
        bit<9> port_out = 0;
        if (hdr.packet_out.isValid()) {
            forward = hdr.packet_out.forward;
            port_out = hdr.packet_out.port;
            hdr.packet_out.setInvalid();
        }
        if (forward == 1) {
            meta.verdict = VERDICT_FORWARD;
        }
        // Not switchml traffic is only counted (ignored) and dropped: its verdict stays
        // VERDICT_DROP, as the parser wrote it.
        if (meta.switchml == 1 && forward == 0) {
            switch_config.apply();
            if (meta.recirculated == 0) {
                // Pass 0: everything but the later value blocks and the end of a run.
                meta.ingress_port = ig_intr_md.ingress_port;
                if (meta.from_cpu == 1) {
                    meta.ingress_port = port_out;
                }
                meta.parser_failed = (ig_prsr_md.parser_err != 0) ? 1w1 : 1w0;
                validator.apply(hdr, meta);
                // Joins, Statuses and Cookies go to the controller first (protocol.md §4.2):
                // it checks the tag and cookie a pipeline cannot compute, answers Statuses,
                // Cookies and refusals itself, and sends an admitted Join back on the CPU
                // port. The pipeline compares no key: a Join is taken from the CPU port only.
                bit<1> controllers = 0;
                if (meta.message == MSG_JOIN) {
                    controllers = 1;
                }
                if (meta.message == MSG_STATUS) {
                    controllers = 1;
                }
                if (meta.message == MSG_COOKIE) {
                    controllers = 1;
                }
                if (controllers == 1 && meta.from_cpu == 0) {
                    meta.to_cpu = 1;
                } else if (meta.message == MSG_STATUS || meta.message == MSG_COOKIE) {
                    // The controller answers these itself and never injects them.
                    meta.drop_reason = DROP_UNEXPECTED_TYPE;
                }
            } else {
                // A later pass: what pass 0 decided comes in the bridge headers. A Contribution's
                // next block of values, or the pass that ends the run of a restarted rank's Join,
                // of the last Leave or of a parent's Abort (no bridge_use: the parser wrote 0).
                meta.message = hdr.bridge.message;
                meta.run_session = hdr.bridge.run_session;
                meta.pass = hdr.bridge.pass + 1;
                meta.ingress_port = hdr.bridge.ingress_port;
                meta.world = hdr.bridge.world;
                meta.group = hdr.bridge.group;
                meta.job_index = hdr.bridge.job_index;
                meta.job_hit = 1;
                meta.up = hdr.bridge.up;
                meta.from_parent = hdr.bridge.from_parent;
                meta.parent_session = hdr.bridge.parent_session;
                if (hdr.bridge_use.isValid()) {
                    meta.passes = hdr.bridge_use.passes;
                    meta.last_value_pass = hdr.bridge_use.last_value_pass;
                    meta.blocks = hdr.bridge_use.blocks;
                    meta.parse_lanes = hdr.bridge_use.parse_lanes;
                    meta.outcome = hdr.bridge_use.outcome;
                    meta.update = hdr.bridge_use.update;
                    meta.exp = hdr.bridge_use.exp;
                    meta.last = hdr.bridge_use.last;
                    meta.packet_flags = hdr.bridge_use.packet_flags;
                    meta.result_flags = hdr.bridge_use.result_flags;
                    meta.held_count = hdr.bridge_use.held_count;
                    meta.pool_slot = hdr.bridge_use.pool_slot;
                    meta.version_index = hdr.bridge_use.version_index;
                    meta.rank_bit = hdr.bridge_use.rank_bit;
                    hdr.bridge_use.setInvalid();
                }
                hdr.bridge.setInvalid();
            }
#ifdef SWITCHML_TIERS
            // The job's tier (tier_selector.p4, protocol.md §7), in every pass: the last pass
            // of an answer that goes up or down needs the link again.
            if (meta.to_cpu == 0 && (meta.message != MSG_NONE || meta.from_parent == 1)) {
                tier_selector.apply(hdr, meta);
            }
#else
            // Flat build: every job is flat (the parser wrote meta.tier and meta.lookup_job),
            // and a Result or a JoinReply, which only a parent sends, is UnexpectedType, as
            // the tier selector finds with no child_job entry.
            if (meta.from_parent == 1 || meta.message == MSG_RESULT) {
                meta.drop_reason = DROP_UNEXPECTED_TYPE;
                meta.message = MSG_NONE;
            }
#endif
            if (meta.recirculated == 0 && meta.to_cpu == 0) {
                if (meta.message != MSG_NONE) {
                    classifier.apply(hdr, meta);
                }
                if (meta.tier != TIER_CHILD) {
                    meta.wire_world = meta.world;
                }
                if (meta.message == MSG_JOIN) {
                    join_handler.apply(hdr, meta);
#ifdef SWITCHML_TIERS
                } else if (meta.message == MSG_RESULT || meta.message == MSG_JOIN_REPLY
                        || meta.message == MSG_PARENT_ABORT) {
                    parent_result.apply(hdr, meta);
#endif
                }
            }
            // Every message of a known job meets its run in pass 0 (a refused Join does not);
            // the later pass of a Join, a Leave or a parent's Abort ends it. Decided as a
            // flag, a comparison at a time: a bf-p4c gateway cannot negate the `!=`s of one
            // long condition ("gateway condition too complex").
            bit<1> track = 0;
            if (meta.recirculated == 0 && meta.job_hit == 1 && meta.abort_reason == 0) {
                track = 1;
            }
            if (meta.recirculated == 1) {
                track = 1;
            }
            if (meta.message == MSG_NONE) {
                track = 0;
            }
            if (meta.to_cpu == 1) {
                track = 0;
            }
            if (meta.recirculated == 1 && meta.message == MSG_CONTRIBUTION) {
                track = 0;
            }
            if (meta.recirculated == 1 && meta.message == MSG_RESULT) {
                track = 0;
            }
            if (track == 1) {
                run_tracker.apply(hdr, meta);
            }
            // The slot's registers, each applied from here only: a Contribution's checks, or a
            // Probe's or a parent's Result's reads (`result`: the Result also counts, and
            // stores at `relay`), in pass 0.
            bit<1> check = 0;
            bit<1> read = 0;
            bit<1> result = 0;
            if (meta.recirculated == 0) {
                if (meta.message == MSG_CONTRIBUTION && meta.drop_reason == DROP_NONE) {
                    check = 1;
                    meta.p_seq = hdr.data.seq;
                    meta.p_ver = hdr.data.ver;
                } else if (meta.message == MSG_RESULT && meta.drop_reason == DROP_NONE) {
                    read = 1;
                    result = 1;
                } else if (meta.message == MSG_PROBE) {
                    probe_handler.apply(hdr, meta, read);
                    meta.p_ver = hdr.probe.ver;
                } else if ((meta.message == MSG_ABORT || meta.message == MSG_LEAVE)
                        && meta.job_hit == 0) {
                    meta.drop_reason = DROP_UNKNOWN_JOB;
                }
            }
            if (check == 1 || read == 1) {
                use_checker.apply(meta, read);
            }
            if ((check == 1 && meta.stale == 0) || result == 1) {
                count_checker.apply(meta, hdr.data.count);
            }
            if ((check == 1 && meta.stale == 0) || read == 1) {
                bitmap_checker.apply(meta, read);
                workers_counter.apply(meta, read);
            }
#ifdef SWITCHML_TIERS
            // What a child knows of the use it sent up (relay.p4): a Result stores if the
            // version holds its use complete with its count.
            if ((check == 1 && meta.stale == 0) || result == 1) {
                bit<1> store = (result == 1 && meta.in_session == 1
                    && meta.held_seq == meta.p_seq && meta.remaining == 0
                    && meta.held_count == hdr.data.count) ? 1w1 : 1w0;
                relay.apply(meta, store);
            }
#endif
            // A Contribution's fate and its passes over the values (next_step_selector.p4):
            // pass 0 after the checks, and every later pass. The exponent and the overflow
            // flag come after the value registers, in the pass that consumes the last block.
            if ((check == 1 && meta.stale == 0) || result == 1
                    || (meta.recirculated == 1 && (meta.message == MSG_CONTRIBUTION
                        || meta.message == MSG_RESULT))) {
                next_step_selector.apply(hdr, meta);
                if (meta.update != UPDATE_NONE) {
                    processors.apply(hdr, meta);
                    if (meta.pass == meta.last_value_pass) {
                        exponents.apply(meta, hdr.data.exp);
                        overflow_flag.apply(meta);
                    }
                }
            }

            if (meta.to_cpu == 1) {
                meta.verdict = VERDICT_TO_CPU;
            } else if ((meta.message == MSG_CONTRIBUTION || meta.message == MSG_RESULT)
                    && meta.drop_reason == DROP_NONE && meta.stale == 0) {
                // next_step_selector.p4 already chose this pass's verdict.
            } else if (meta.drop_reason != DROP_NONE) {
                meta.verdict = VERDICT_DROP;
            } else if (meta.run_end == 1) {
                meta.verdict = VERDICT_RECIRCULATE;
            } else if (meta.abort_reason == ABORT_RANK_RESTARTED
                    || meta.abort_reason == ABORT_PARENT_FAILED) {
                meta.verdict = VERDICT_MULTICAST;
            } else if (meta.abort_reason != 0) {
                meta.verdict = VERDICT_UNICAST;
#ifdef SWITCHML_TIERS
            } else if (meta.message == MSG_JOIN && meta.up == 1) {
                meta.verdict = VERDICT_UP;
#endif
            } else if (meta.join_completes == 1) {
                meta.verdict = VERDICT_MULTICAST;       // a Join's, or a parent's COMPLETE's
            } else if (meta.message == MSG_JOIN_REPLY) {
                meta.verdict = VERDICT_CONSUME;
            } else if (meta.message == MSG_ABORT) {
                meta.verdict = VERDICT_MULTICAST;
            } else if (meta.message == MSG_LEAVE) {
                meta.verdict = VERDICT_CONSUME;
            } else {
                meta.verdict = VERDICT_UNICAST;
            }
#ifdef SWITCHML_TIERS
            // A completion that would go up before the child holds its parent's session is
            // built and sent to the egress, which counts its overflow and drops it.
            if (meta.up == 1 && meta.last == 1 && meta.verdict == VERDICT_CONSUME) {
                meta.verdict = VERDICT_UP;
            }
#endif
            if (meta.verdict == VERDICT_UNICAST || meta.verdict == VERDICT_MULTICAST
                    || meta.verdict == VERDICT_UP) {
                reply_builder.apply(hdr, meta);
            }
        }
        drop_counters.apply(meta);
        // Not for what goes to the controller or comes from it as its answer: the
        // controller counts those.
        if (meta.switchml == 1 && meta.to_cpu == 0 && meta.verdict != VERDICT_FORWARD) {
            job_counters.apply(meta);
        }
        // What goes to the controller: a punted message behind the port it came in on, or a
        // child's Join up (unsigned: the controller puts in the parent's cookie, signs it with
        // the parent job's key and sends it out of the parent's port, protocol.md §7).
        bit<1> join_up = 0;
#ifdef SWITCHML_TIERS
        if (meta.verdict == VERDICT_UP && meta.message == MSG_JOIN) {
            join_up = 1;
        }
#endif
        if (meta.verdict == VERDICT_TO_CPU) {
            hdr.packet_in.setValid();
            hdr.packet_in.port = meta.ingress_port;
            hdr.packet_in.up = 0;
            hdr.packet_in.pad = 0;
#ifdef SWITCHML_TIERS
        } else if (join_up == 1) {
            hdr.packet_in.setValid();
            hdr.packet_in.port = (bit<9>)meta.parent_port;
            hdr.packet_in.up = 1;
            hdr.packet_in.pad = 0;
#endif
        }
        // A restarted rank's Join ends the run in a second pass, whose mirror is the Abort
        // up: its cookie and tag are not needed there (p4/README.md, "Resources").
        if (meta.verdict == VERDICT_RECIRCULATE) {
            hdr.join_auth.setInvalid();
        }

#ifdef SWITCHML_TIERS
        // A child's run ended with an Abort to its ranks: a mirror of this packet, to the
        // parent's port, becomes the Abort the child owes its parent (egress).
        if (meta.up_reason != 0) {
            ig_dprsr_md.mirror_type = MIRROR_TYPE_UP;
            meta.up_kind = 0xF;
            meta.up_bridged = (bit<4>)meta.recirculated;
            meta.up_mirror = UP_MIRROR_BASE + (bit<10>)meta.job_index;
        }
#endif
        hdr.egress_bridge.setValid();
        hdr.egress_bridge.pad = 0;
        hdr.egress_bridge.keep = 0;
        if (meta.verdict == VERDICT_TO_CPU || meta.verdict == VERDICT_FORWARD) {
            hdr.egress_bridge.keep = 1;
        }
        hdr.egress_bridge.cpu = join_up;
        hdr.egress_bridge.up = (meta.verdict == VERDICT_UP) ? 1w1 : 1w0;
        hdr.egress_bridge.drop = (meta.verdict == VERDICT_UP && meta.parent_session == 0)
            ? 1w1 : 1w0;
        hdr.egress_bridge.completes = (meta.message == MSG_CONTRIBUTION && meta.last == 1)
            ? 1w1 : 1w0;
        hdr.egress_bridge.parent_mac = meta.parent_mac;
        hdr.egress_bridge.parent_ip = meta.parent_ip;
        hdr.egress_bridge.parent_udp_port = meta.parent_udp_port;
        hdr.egress_bridge.recirculate = 0;
        hdr.egress_bridge.reply_len = meta.reply_len;
        hdr.egress_bridge.switch_mac = meta.switch_mac;
        hdr.egress_bridge.switch_ip = meta.switch_ip;
        hdr.egress_bridge.job_index = meta.job_index;
        if (meta.verdict == VERDICT_DROP || meta.verdict == VERDICT_CONSUME) {
            ig_dprsr_md.drop_ctl = 1;
        } else if (meta.verdict == VERDICT_TO_CPU || join_up == 1) {
            ig_tm_md.ucast_egress_port = meta.cpu_port;
        } else if (meta.verdict == VERDICT_FORWARD) {
            ig_tm_md.ucast_egress_port = port_out;
        } else if (meta.verdict == VERDICT_MULTICAST) {
            ig_tm_md.mcast_grp_a = meta.group;
#ifdef SWITCHML_TIERS
        } else if (meta.verdict == VERDICT_UP) {
            ig_tm_md.ucast_egress_port = (PortId_t)meta.parent_port;
#endif
        } else if (meta.verdict == VERDICT_RECIRCULATE) {
            hdr.egress_bridge.recirculate = 1;
            hdr.bridge.setValid();
            hdr.bridge.message = meta.message;
            hdr.bridge.pass = meta.pass;
            hdr.bridge.pad = 0;
            hdr.bridge.up = meta.up;
            hdr.bridge.from_parent = meta.from_parent;
            hdr.bridge.pad2 = 0;
            hdr.bridge.ingress_port = meta.ingress_port;
            hdr.bridge.run_session = meta.run_session;
            hdr.bridge.parent_session = meta.parent_session;
            hdr.bridge.world = meta.world;
            hdr.bridge.group = meta.group;
            hdr.bridge.job_index = meta.job_index;
            // A Contribution's or a Result's use (the parser extracts it for those messages).
            if (hdr.data.isValid()) {
                hdr.bridge_use.setValid();
                hdr.bridge_use.passes = meta.passes;
                hdr.bridge_use.last_value_pass = meta.last_value_pass;
                hdr.bridge_use.outcome = meta.outcome;
                hdr.bridge_use.update = meta.update;
                hdr.bridge_use.exp = meta.exp;
                hdr.bridge_use.blocks = meta.blocks;
                hdr.bridge_use.parse_lanes = meta.parse_lanes;
                hdr.bridge_use.pad = 0;
                hdr.bridge_use.result_flags = meta.result_flags;
                hdr.bridge_use.last = meta.last;
                hdr.bridge_use.packet_flags = meta.packet_flags;
                hdr.bridge_use.held_count = meta.held_count;
                hdr.bridge_use.pool_slot = meta.pool_slot;
                hdr.bridge_use.version_index = meta.version_index;
                hdr.bridge_use.rank_bit = meta.rank_bit;
            }
            ig_tm_md.ucast_egress_port = RECIRCULATION_PORT;
        } else {
            ig_tm_md.ucast_egress_port = meta.ingress_port;
        }
    }
}

control SwitchmlIngressDeparser(packet_out packet, inout headers_t hdr, in metadata_t meta,
                                in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
#ifdef SWITCHML_TIERS
    Mirror() mirror;
#endif

    apply {
#ifdef SWITCHML_TIERS
        if (ig_dprsr_md.mirror_type == MIRROR_TYPE_UP) {
            mirror.emit<sml_up_mirror_h>((MirrorId_t)meta.up_mirror,
                {meta.up_kind, meta.up_bridged, meta.up_reason, meta.parent_job,
                 meta.parent_member, meta.up_session, meta.parent_mac, meta.parent_ip,
                 meta.parent_udp_port, meta.switch_mac, meta.switch_ip});
        }
#endif
        // Every header but bitmap_in, a parent's JoinReply's bitmap, which is never sent
        // (tiered build; the flat one has neither it nor bitmap_lead and bitmap_tail).
        packet.emit(hdr.egress_bridge);
        packet.emit(hdr.bridge);
        packet.emit(hdr.bridge_use);
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.prefix);
        packet.emit(hdr.data);
        packet.emit(hdr.join);
        packet.emit(hdr.join_auth);
        packet.emit(hdr.join_reply);
        packet.emit(hdr.probe);
        packet.emit(hdr.probe_reply);
        packet.emit(hdr.abort);
        packet.emit(hdr.status);
        packet.emit(hdr.leave);
#ifdef SWITCHML_TIERS
        packet.emit(hdr.bitmap_lead);
#endif
        packet.emit(hdr.bitmap);
#ifdef SWITCHML_TIERS
        packet.emit(hdr.bitmap_tail);
#endif
        packet.emit(hdr.values);
    }
}

control SwitchmlEgress(inout egress_headers_t hdr, inout egress_metadata_t meta,
                       in egress_intrinsic_metadata_t eg_intr_md,
                       in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                       inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                       inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    JobEgressCounters() job_egress_counters;
    UdpSender() udp_sender;
    CongestionMarker() congestion_marker;

    apply {
#ifdef SWITCHML_TIERS
        if (hdr.up_mirror.isValid()) {
            // The Abort a child owes its parent (protocol.md §7), written over the mirrored
            // packet: member `member` of the parent's job and run, epoch 0, detail the
            // member for a restart, else none; addressed as anything going up.
            hdr.bridge.setInvalid();
            hdr.join.setInvalid();
            hdr.abort.setValid();
            hdr.prefix.msg_type = TYPE_ABORT;
            hdr.prefix.job = hdr.up_mirror.parent_job;
            hdr.prefix.rank = hdr.up_mirror.member;
            hdr.abort.reason = hdr.up_mirror.reason;
            hdr.abort.reserved_a = 0;
            hdr.abort.detail = (hdr.up_mirror.reason == ABORT_RANK_RESTARTED)
                ? hdr.up_mirror.member : ABORT_NAMES_NONE;
            hdr.abort.reserved_b = 0;
            hdr.abort.epoch = 0;
            hdr.abort.session = hdr.up_mirror.session;
            hdr.egress_bridge.setValid();
            hdr.egress_bridge.pad = 0;
            hdr.egress_bridge.keep = 0;
            hdr.egress_bridge.cpu = 0;
            hdr.egress_bridge.up = 1;
            hdr.egress_bridge.drop = 0;
            hdr.egress_bridge.completes = 0;
            hdr.egress_bridge.recirculate = 0;
            hdr.egress_bridge.reply_len = 20;
            hdr.egress_bridge.switch_mac = hdr.up_mirror.switch_mac;
            hdr.egress_bridge.switch_ip = hdr.up_mirror.switch_ip;
            hdr.egress_bridge.job_index = 0;
            hdr.egress_bridge.parent_mac = hdr.up_mirror.parent_mac;
            hdr.egress_bridge.parent_ip = hdr.up_mirror.parent_ip;
            hdr.egress_bridge.parent_udp_port = hdr.up_mirror.parent_udp_port;
            hdr.up_mirror.setInvalid();
        }
#endif
        job_egress_counters.apply(hdr, eg_intr_md);
        udp_sender.apply(hdr, eg_intr_md);
        // A Result leaving by a deep queue is marked CONGESTED (protocol.md §6.3), after
        // job_overflows read its flag byte.
        congestion_marker.apply(hdr, eg_intr_md);
        if (hdr.egress_bridge.drop == 1) {
            eg_dprsr_md.drop_ctl = 1;
        }
        hdr.egress_bridge.setInvalid();
    }
}

control SwitchmlEgressDeparser(packet_out packet, inout egress_headers_t hdr,
                               in egress_metadata_t meta,
                               in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        hdr.ipv4.checksum = ipv4_checksum.update({
            hdr.ipv4.version_ihl, hdr.ipv4.tos, hdr.ipv4.total_len, hdr.ipv4.ident,
            hdr.ipv4.flag_reserved, hdr.ipv4.flag_df, hdr.ipv4.flag_mf, hdr.ipv4.frag_offset,
            hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst });
        packet.emit(hdr);
    }
}

Pipeline(SwitchmlParser(), SwitchmlIngress(), SwitchmlIngressDeparser(),
         SwitchmlEgressParser(), SwitchmlEgress(), SwitchmlEgressDeparser()) pipe;

Switch(pipe) main;
