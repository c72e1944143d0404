// switchml.p4 (v1model, BMv2 simple_switch): the switchml-rs switch, docs/protocol.md §4.
// Rust twin of the ingress/egress orchestration: p4/model/src/pipeline.rs (Pipeline);
// every control is in its own file, twin named in its header. Compile:
//   p4c-bm2-ss --std p4-16 -I ../include -o switchml.json switchml.p4
// Every control, and so every register, is applied from one place, at most once per pass
// (p4/README.md, "What is known about the programs").
#include <core.p4>
#include <v1model.p4>

// BMv2 has no stage limit: the v1model program is always the tiered one (protocol.md §7),
// as the Rust model is; only the TNA program has a flat build (p4/tna/switchml.p4).
#define SWITCHML_TIERS

#include "../include/headers.p4"

const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;
const bit<32> PKT_INSTANCE_TYPE_INGRESS_RECIRC = 4;
// The clone session of job table entry j's Abort up is UP_CLONE_BASE + j; the controller
// maps it to the parent's port (simple_switch_CLI `mirroring_add`) with the job's
// parent_link entry (protocol.md §7).
const bit<32> UP_CLONE_BASE = 1024;
// The CPU port, where the controller reads what the pipeline sends it (packet_in) and
// injects what it sends back (packet_out): protocol.md §4.2, p4/README.md "Joins and the
// controller". BMv2 is started with it: `simple_switch ... -i 64@<the controller's veth>`,
// or `simple_switch_grpc ... -- --cpu-port 64` for a P4Runtime controller.
const bit<9> CPU_PORT = 64;

// The metadata of every block of the v1model program: the program's own (metadata_t,
// shared with TNA in include/headers.p4) and the port pass 0 came in on. BMv2 zeroes
// standard metadata, ingress_port included, when it recirculates a packet, so a multi-pass
// answer sent to `standard_metadata.ingress_port` left on port 0 (issue 31); the port rides
// in field list 1 instead, which recirculate_preserving_field_list(1) keeps. The ingress and
// egress copy `sml` into a local `meta` and back, so their bodies read as TNA's do. p4c
// keeps a nested field's @field_list when it flattens the struct.
struct v1model_metadata_t {
    metadata_t sml;
    @field_list(1) bit<9> ingress_port;
}

#include "parser.p4"
#include "../include/validator.p4"
#include "../include/tier_selector.p4"
#include "../include/classifier.p4"
#include "../include/parent_result.p4"
#include "use_checker.p4"
#include "count_checker.p4"
#include "bitmap_checker.p4"
#include "workers_counter.p4"
#include "relay.p4"
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

control SwitchmlVerifyChecksum(inout headers_t hdr, inout v1model_metadata_t v1) {
    apply { }
}

control SwitchmlIngress(inout headers_t hdr, inout v1model_metadata_t v1,
                        inout standard_metadata_t standard_metadata) {
    metadata_t meta;                            // v1.sml, copied back before the clone
    Validator() validator;
    TierSelector() tier_selector;
    Classifier() classifier;
    ParentResult() parent_result;
    UseChecker() use_checker;
    CountChecker() count_checker;
    BitmapChecker() bitmap_checker;
    WorkersCounter() workers_counter;
    Relay() relay;
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

    // The switch's addresses, its epoch and the largest count it accepts (the model's
    // Config; a max_count above MAX_COUNT, what the registers hold, is taken as MAX_COUNT).
    action set_switch_config(bit<48> mac, bit<32> ip, bit<32> epoch, bit<16> max_count) {
        meta.switch_mac = mac;
        meta.switch_ip = ip;
        meta.epoch = epoch;
        meta.max_count = (max_count > MAX_COUNT) ? MAX_COUNT : max_count;
    }

    table switch_config {
        actions = { set_switch_config; }
        default_action = set_switch_config(0, 0, 0, MAX_COUNT);
    }

    apply {
        meta = v1.sml;
        if (standard_metadata.instance_type != PKT_INSTANCE_TYPE_INGRESS_RECIRC) {
            v1.ingress_port = standard_metadata.ingress_port;
        }
        // Not switchml traffic is only counted (ignored) and dropped.
        meta.verdict = VERDICT_DROP;
        if (hdr.packet_out.isValid()) {
            // From the controller (protocol.md §4.2): its own answer, out of the port it
            // names as it is, or an admitted Join, taken as from the port it came in on.
            v1.ingress_port = hdr.packet_out.port;
            if (hdr.packet_out.forward == 1) {
                meta.verdict = VERDICT_FORWARD;
            }
            hdr.packet_out.setInvalid();
        }
        if (meta.switchml == 1 && meta.verdict != VERDICT_FORWARD) {
            switch_config.apply();
            bit<1> first = (standard_metadata.instance_type != PKT_INSTANCE_TYPE_INGRESS_RECIRC)
                ? 1w1 : 1w0;
            if (first == 1) {
                // Pass 0: everything but the later blocks of values and the end of a run.
                meta.pass = 0;
                meta.drop_reason = DROP_NONE;
                meta.outcome = OUTCOME_NONE;
                meta.parser_failed = (standard_metadata.parser_error != error.NoError) ? 1w1 : 1w0;
                validator.apply(hdr, meta);
                // Joins, Statuses and Cookies go to the controller first (protocol.md §4.2):
                // it checks the tag and cookie a pipeline cannot compute, answers Statuses,
                // Cookies and refusals itself, and sends an admitted Join back on the CPU
                // port. The pipeline compares no key: a Join is taken from the CPU port only.
                if (meta.from_cpu == 0 && (meta.message == MSG_JOIN
                        || meta.message == MSG_STATUS || meta.message == MSG_COOKIE)) {
                    meta.to_cpu = 1;
                } else if (meta.message == MSG_STATUS || meta.message == MSG_COOKIE) {
                    // The controller answers these itself and never injects them.
                    meta.drop_reason = DROP_UNEXPECTED_TYPE;
                }
            } else {
                // A later pass: a Contribution's (or a parent's Result's) next block of
                // values, or the pass that ends the run of a restarted rank's Join or of the
                // last Leave.
                meta.pass = meta.pass + 1;
                meta.job_hit = 1;
                meta.drop_reason = DROP_NONE;
            }
            // The job's tier (tier_selector.p4, protocol.md §7), in every pass: the last pass
            // of an answer that goes up or down needs the link again.
            if (meta.to_cpu == 0 && (meta.message != MSG_NONE || meta.from_parent == 1)) {
                tier_selector.apply(hdr, meta);
            }
            if (first == 1 && meta.to_cpu == 0) {
                if (meta.message != MSG_NONE) {
                    classifier.apply(hdr, meta);
                }
                if (meta.tier != TIER_CHILD) {
                    meta.wire_world = meta.world;
                }
                if (meta.message == MSG_JOIN) {
                    join_handler.apply(hdr, meta);
                } else if (meta.message == MSG_RESULT || meta.message == MSG_JOIN_REPLY
                        || meta.message == MSG_PARENT_ABORT) {
                    parent_result.apply(hdr, meta);
                }
            }
            // Every message of a known job meets its run in pass 0 (a refused Join does not);
            // the later pass of a Join or a Leave ends it.
            if ((first == 1 && meta.to_cpu == 0 && meta.message != MSG_NONE
                        && meta.job_hit == 1 && meta.abort_reason == 0)
                    || (first == 0 && meta.message != MSG_CONTRIBUTION
                        && meta.message != MSG_RESULT)) {
                run_tracker.apply(hdr, meta);
            }
            // The slot's registers, each applied from here only: a Contribution's checks, or a
            // Probe's or a parent's Result's reads (`result`: the Result also counts, and
            // stores at `relay`), in pass 0.
            bit<1> check = 0;
            bit<1> read = 0;
            bit<1> result = 0;
            if (first == 1) {
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
            // What a child knows of the use it sent up (relay.p4): a Result stores if the
            // version holds its use complete with its count.
            if ((check == 1 && meta.stale == 0) || result == 1) {
                bit<1> store = (result == 1 && meta.in_session == 1
                    && meta.held_seq == meta.p_seq && meta.remaining == 0
                    && meta.held_count == hdr.data.count) ? 1w1 : 1w0;
                relay.apply(meta, store);
            }
            // A Contribution's fate and its passes over the values (next_step_selector.p4):
            // pass 0 after the checks, and every later pass.
            if ((check == 1 && meta.stale == 0) || result == 1
                    || (first == 0 && (meta.message == MSG_CONTRIBUTION
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
            } else if (meta.message == MSG_JOIN && meta.up == 1) {
                meta.verdict = VERDICT_UP;
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
        if (meta.verdict == VERDICT_TO_CPU) {
            hdr.packet_in.setValid();
            hdr.packet_in.port = v1.ingress_port;
            hdr.packet_in.up = 0;
            hdr.packet_in.pad = 0;
        } else if (meta.verdict == VERDICT_UP && meta.message == MSG_JOIN) {
            hdr.packet_in.setValid();
            hdr.packet_in.port = (bit<9>)meta.parent_port;
            hdr.packet_in.up = 1;
            hdr.packet_in.pad = 0;
        }

        // What the egress, the clone and a recirculation see is v1.sml: copied back before
        // the clone is asked for (nothing below writes meta).
        v1.sml = meta;
        // A child's run ended with an Abort to its ranks: a clone of this packet, to the
        // parent's port, becomes the Abort the child owes its parent (egress).
        if (meta.up_reason != 0) {
            clone_preserving_field_list(CloneType.I2E,
                UP_CLONE_BASE + (bit<32>)meta.job_index, 2);
        }
        if (meta.verdict == VERDICT_DROP || meta.verdict == VERDICT_CONSUME) {
            mark_to_drop(standard_metadata);
        } else if (meta.verdict == VERDICT_TO_CPU || hdr.packet_in.isValid()) {
            standard_metadata.egress_spec = CPU_PORT;
        } else if (meta.verdict == VERDICT_MULTICAST) {
            standard_metadata.mcast_grp = meta.group;
        } else if (meta.verdict == VERDICT_UP) {
            standard_metadata.egress_spec = (bit<9>)meta.parent_port;
        } else {
            // Unicast answers and recirculations leave by the port pass 0 came in on.
            standard_metadata.egress_spec = v1.ingress_port;
        }
    }
}

control SwitchmlEgress(inout headers_t hdr, inout v1model_metadata_t v1,
                       inout standard_metadata_t standard_metadata) {
    UdpSender() udp_sender;
    CongestionMarker() congestion_marker;
    metadata_t meta;                            // v1.sml, copied back before recirculating

    apply {
        meta = v1.sml;
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            // The Abort a child owes its parent (protocol.md §7), written over the clone
            // (a worker's Abort, or a restarted rank's Join): member parent_member of the
            // parent's job and run, epoch 0, detail the member for a restart, else none.
            hdr.join.setInvalid();
            hdr.join_auth.setInvalid();
            hdr.packet_in.setInvalid();
            hdr.packet_out.setInvalid();
            hdr.abort.setValid();
            hdr.prefix.msg_type = TYPE_ABORT;
            hdr.prefix.job = meta.parent_job;
            hdr.prefix.rank = meta.parent_member;
            hdr.abort.reason = meta.up_reason;
            hdr.abort.reserved_a = 0;
            hdr.abort.detail = (meta.up_reason == ABORT_RANK_RESTARTED)
                ? meta.parent_member : ABORT_NAMES_NONE;
            hdr.abort.reserved_b = 0;
            hdr.abort.epoch = 0;
            hdr.abort.session = meta.up_session;
            meta.reply_len = 20;
            meta.verdict = VERDICT_UP;
        }
        // Before the recirculation is asked for; the sender's writes to meta are this
        // pass's only.
        v1.sml = meta;
        if (meta.verdict == VERDICT_RECIRCULATE) {
            recirculate_preserving_field_list(1);
        } else if (meta.verdict != VERDICT_TO_CPU && meta.verdict != VERDICT_FORWARD) {
            // A punted message and the controller's answer leave as they are; a Result
            // leaving by a deep queue is marked CONGESTED (protocol.md §6.3).
            udp_sender.apply(hdr, meta, standard_metadata);
            congestion_marker.apply(hdr, standard_metadata);
        }
    }
}

control SwitchmlComputeChecksum(inout headers_t hdr, inout v1model_metadata_t v1) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version_ihl, hdr.ipv4.tos, hdr.ipv4.total_len, hdr.ipv4.ident,
              hdr.ipv4.flag_reserved, hdr.ipv4.flag_df, hdr.ipv4.flag_mf,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src,
              hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control SwitchmlDeparser(packet_out packet, in headers_t hdr) {
    apply {
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
        packet.emit(hdr.bitmap_lead);
        packet.emit(hdr.bitmap);
        packet.emit(hdr.bitmap_tail);
        packet.emit(hdr.values);                // bitmap_in, a parent's, is never sent
    }
}

V1Switch(SwitchmlParser(), SwitchmlVerifyChecksum(), SwitchmlIngress(), SwitchmlEgress(),
         SwitchmlComputeChecksum(), SwitchmlDeparser()) main;
