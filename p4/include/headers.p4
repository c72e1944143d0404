// switchml-rs P4: headers and metadata shared by both targets (docs/protocol.md §2-3).
// Rust twin: p4/model/src/headers.rs (the model reads the same fields through
// switchml_core::wire views).
#ifndef _SWITCHML_HEADERS_P4_
#define _SWITCHML_HEADERS_P4_

#include "constants.p4"

header ethernet_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_h {
    bit<8>  version_ihl;
    bit<8>  tos;
    bit<16> total_len;
    bit<16> ident;
    bit<1>  flag_reserved;
    bit<1>  flag_df;
    bit<1>  flag_mf;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

// The CPU port's headers (p4/README.md, "Joins and the controller"; protocol.md §4.2). A Join,
// Status or Cookie that came in on any other port leaves for the CPU port behind a packet_in
// header naming that port; the controller checks the Join's tag and cookie in software and
// sends an admitted Join back behind a packet_out header naming the same port (`forward`
// 0: the pipeline takes it as from that port), or its own answer (a Cookie, an Abort
// BadKey or UnknownJob, a StatusReply, a child's signed Join up) with `forward` 1: out of
// that port as it is. 2 bytes each; BMv2 (simple_switch_grpc) and P4Runtime add and strip
// them at the CPU port by these annotations. A child's Join up (protocol.md §7) goes to the
// CPU port too, `up` set and `port` the parent's, for the controller to sign and send.
@controller_header("packet_in")
header packet_in_h {
    bit<9>  port;                              // the port it came in on; `up`: the parent's
    bit<1>  up;                                // a child's Join up, for the controller to sign
    bit<6>  pad;
}

@controller_header("packet_out")
header packet_out_h {
    bit<9>  port;                              // forward 0: the port the Join came in on
    bit<1>  forward;                           // 1: send out of `port` unchanged
    bit<6>  pad;
}

// Every message starts with it (protocol.md §2).
header sml_prefix_h {
    bit<8>  version;
    bit<8>  msg_type;
    bit<16> job;
    bit<16> rank;
}

// Contribution / Result after the prefix (§3.1).
header sml_data_h {
    bit<16> slot;
    bit<8>  ver;
    bit<8>  flags;
    bit<16> count;
    bit<32> seq;
    bit<8>  exp;
    bit<24> reserved;
    bit<32> session;                           // the job run's (§4.1); echoed in the Result
}

// One int32 value. The parser extracts one block of VALUES_PER_PASS at a time (`values`):
// the block a pass handles is at the front of the packet's values (next_step_selector.p4).
header value_h {
    bit<32> v;
}

// Join after the prefix (§3.2).
header sml_join_h {
    bit<16> world;
    bit<16> slot_lo;
    bit<16> slot_count;
    bit<16> count;
    bit<16> lanes;                             // the rank's number of lanes, non-zero
    bit<32> nonce;                             // the worker process's, non-zero
}

// The rest of a Join (§3.2): the switch's cookie and the HMAC tag over the Join, which the
// controller checked before the Join came back from the CPU port (§4.2). The pipeline
// never reads them: it compares no key. A child's Join up leaves with both zero, for its
// controller to fill (reply_builder.p4). 24 bytes.
header sml_join_auth_h {
    bit<64> cookie;
    bit<64> tag_hi;
    bit<64> tag_lo;
}

// JoinReply after the prefix, without the bitmap (§3.3).
header sml_join_reply_h {
    bit<16> world;
    bit<8>  flags;
    bit<8>  reserved;
    bit<16> max_count;
    bit<32> epoch;
    bit<16> slot_count;
    bit<16> bitmap_len;
    bit<32> session;
    bit<32> nonce;                             // of the Join it answers (the completing one's)
    bit<16> lane_slots;                        // the run's agreed lane shape: the Join's,
    bit<16> count;                             // since the run tracker refused any other
}

// Probe after the prefix (§3.4).
header sml_probe_h {
    bit<16> slot;
    bit<8>  ver;
    bit<24> reserved;
    bit<32> seq;
    bit<32> session;
}

// ProbeReply after the prefix, without the bitmap (§3.5).
header sml_probe_reply_h {
    bit<16> slot;
    bit<8>  ver;
    bit<8>  state;
    bit<16> remaining;
    bit<32> seq;
    bit<32> epoch;
    bit<16> world;
    bit<16> bitmap_len;
    bit<32> session;                           // the Probe's, echoed (§3.5, §4.2 rule 3)
}

// Abort after the prefix (§3.6).
header sml_abort_h {
    bit<8>  reason;
    bit<8>  reserved_a;
    bit<16> detail;
    bit<16> reserved_b;
    bit<32> epoch;
    bit<32> session;
}

// Leave after the prefix (§3.9).
header sml_leave_h {
    bit<16> reserved;
    bit<32> session;
}

// Status after the prefix (§3.7): the validator's to check, the controller's to answer. The
// pipeline sends it to the CPU port as it came; the controller checks its tag and cookie
// and answers with a StatusReply it builds itself, from the job table, the run tracker's
// registers and every counter, which it can read and the data plane cannot. A Cookie
// (§3.10) has nothing parsed after its prefix: a parent's, it goes to the CPU port too.
header sml_status_h {
    bit<16> reserved;
    bit<32> nonce;
    bit<64> cookie;
    bit<64> tag_hi;
    bit<64> tag_lo;
}

// One bitmap byte of a JoinReply or ProbeReply; 8 bytes = 64 ranks.
header bitmap_byte_h {
    bit<8> b;
}

// TNA only: the ingress metadata a recirculated packet carries into its next pass
// (v1model keeps it with recirculate_preserving_field_list instead), in two headers: this
// one, which every later pass has (a Join's or a Leave's that ends its job's run, a parent's
// Abort's), and `sml_bridge_use_h` after it, a Contribution's or a Result's use and next
// block of values only (bridge.message says which). A mirrored Join carries only this one
// into the egress parser, whose longest path must stay within 160 bytes (p4/README.md,
// "Resources"). 19 bytes.
header sml_bridge_h {
    bit<8>  message;
    bit<8>  pass;
    bit<6>  pad;
    bit<1>  up;                                // the answer goes to the parent (§7)
    bit<1>  from_parent;                       // a parent's Result
    bit<7>  pad2;
    bit<9>  ingress_port;
    bit<32> run_session;
    bit<32> parent_session;
    bit<16> world;
    bit<16> group;
    bit<16> job_index;
}

// TNA only: a Contribution's or a Result's use, for its next pass over the values. 28 bytes.
header sml_bridge_use_h {
    bit<8>  passes;
    bit<8>  last_value_pass;
    bit<8>  outcome;
    bit<8>  update;
    bit<8>  exp;
    bit<8>  blocks;
    bit<8>  parse_lanes;
    bit<7>  pad;
    bit<1>  last;
    bit<8>  result_flags;
    bit<8>  packet_flags;
    bit<16> held_count;
    bit<32> pool_slot;
    bit<32> version_index;
    bit<64> rank_bit;
}

// TNA only: the mirror header of the Abort a child owes its parent (protocol.md §7): the
// ingress mirrors the packet that ended the child's run (run_tracker.p4 sets
// meta.up_reason) to the parent's port, and the egress writes the Abort from this. `kind`
// is 0xF, which no egress_bridge starts with (its `pad` is 0); `bridged` is 1 if the
// mirrored packet came from the recirculation port, so that a bridge header precedes its
// Ethernet header. 32 bytes.
header sml_up_mirror_h {
    bit<4>  kind;
    bit<4>  bridged;
    bit<8>  reason;
    bit<16> parent_job;
    bit<16> member;
    bit<32> session;
    bit<48> parent_mac;
    bit<32> parent_ip;
    bit<16> parent_udp_port;
    bit<48> switch_mac;
    bit<32> switch_ip;
}

// TNA only: what the ingress tells the egress pipeline (egress_bridge is never sent out):
// the answer's addresses and length (udp_sender.p4; a child's parent's, protocol.md §7) and
// the job table entry, which the egress's job_overflows counter is indexed by
// (job_counters.p4, JobEgressCounters), with whether the answer is a completion's, and
// whether it is the controller's business (`keep`: a punted message, parsed no further;
// `cpu`: a child's Join up, addressed as anything going up, behind its packet_in header).
header sml_egress_bridge_h {
    bit<2>  pad;
    bit<1>  keep;                              // leave it as it is: a punted message, or the
                                               // controller's answer (§4.2)
    bit<1>  cpu;                               // a child's Join up, to the CPU port (§4.2)
    bit<1>  up;                                // to the parent switch (§7)
    bit<1>  drop;                              // counted, then dropped (no parent session)
    bit<1>  completes;                         // a completing Contribution's answer
    bit<1>  recirculate;
    bit<16> reply_len;
    bit<48> switch_mac;
    bit<32> switch_ip;
    bit<16> job_index;
    bit<48> parent_mac;
    bit<32> parent_ip;
    bit<16> parent_udp_port;
}

struct headers_t {
    sml_egress_bridge_h egress_bridge;
    sml_bridge_h      bridge;
    sml_bridge_use_h  bridge_use;
    ethernet_h        ethernet;
    ipv4_h            ipv4;
    udp_h             udp;
    packet_in_h       packet_in;
    packet_out_h      packet_out;
    sml_prefix_h      prefix;
    sml_data_h        data;
    sml_join_h        join;
    sml_join_auth_h   join_auth;
    sml_join_reply_h  join_reply;
    sml_probe_h       probe;
    sml_probe_reply_h probe_reply;
    sml_abort_h       abort;
    sml_status_h      status;
    sml_leave_h       leave;
#ifdef SWITCHML_TIERS
    bitmap_byte_h[BITMAP_LEAD] bitmap_lead;    // bitmap_writer.p4: zero bytes before,
#endif
    bitmap_byte_h[BITMAP_BODY] bitmap;         // the members' bytes,
#ifdef SWITCHML_TIERS
    bitmap_byte_h[BITMAP_TAIL] bitmap_tail;    // zero bytes after
    bitmap_byte_h[MAX_BITMAP] bitmap_in;       // a parent's JoinReply's: parsed, never sent
#endif
    value_h[VALUES_PER_PASS] values;           // the block of values this pass handles
}

// Ingress metadata. Fields marked @field_list(1) survive a recirculation (v1model); the TNA
// program carries the same fields in its bridged recirculation header.
struct metadata_t {
    bit<1>  switchml;                          // a datagram to the switchml port
    bit<1>  from_cpu;                          // came back from the controller (packet_out)
    bit<1>  to_cpu;                            // goes to the controller (packet_in)
    bit<1>  parser_failed;                     // a header ran past the packet
    bit<16> values_left;                       // v1model parser: values of the packet left
    bit<8>  values_parsed;                     // v1model parser: values of this block
    @field_list(1) bit<8>  message;            // MSG_*
    bit<32> p_session;                         // the message's session (a Join's: its nonce)
    bit<32> p_seq;                             // a Contribution's use number
    bit<8>  p_ver;                             // a Contribution's or a Probe's slot version
    drop_reason_t drop_reason;
    bit<8>  verdict;                           // VERDICT_*
    @field_list(1) bit<8>  pass;
    @field_list(1) bit<8>  passes;
    @field_list(1) bit<8>  last_value_pass;    // consumes the last block; takes exp, overflow
    @field_list(1) bit<8>  blocks;             // blocks of the use's values
    @field_list(1) bit<8>  parse_lanes;        // values the next pass's parser extracts
    bit<8>  block;                             // the block this pass handles
    bit<1>  harvest;                           // this pass reads its block back
    bit<1>  keep_values;                       // the block stays in the packet
    // tier_selector.p4 (protocol.md §7)
    @field_list(1) bit<1>  from_parent;        // a Result or JoinReply
    bit<16> lookup_job;                        // the job id job_table looks up
    @field_list(1) bit<8>  tier;               // TIER_*
    bit<16> wire_world;                        // the world the ranks state (P at a child)
    bit<16> rank_lo;                           // a child's first global rank
    @field_list(2) bit<16> parent_job;
    @field_list(2) bit<16> parent_member;      // this child's rank at the parent
    bit<16> parent_members;                    // the parent's world
    @field_list(2) bit<48> parent_mac;         // where the parent switch is
    @field_list(2) bit<32> parent_ip;
    @field_list(2) bit<16> parent_udp_port;
    bit<16> parent_port;
    @field_list(1) bit<32> parent_session;     // the parent run's (run_tracker.p4 `parent`)
    bit<1>  parent_complete;
    drop_reason_t parent_reject;               // parent_result.p4's finding, after the session
    bit<16> run_lane_slots;                    // the run's lane shape, for a child's COMPLETE
    bit<16> run_count;
    // relay.p4
    bit<1>  relayed;                           // the version holds the parent's Result
    bit<1>  ask;                               // this resend goes up again
    @field_list(1) bit<1>  up;                 // the answer goes to the parent
    // classifier.p4
    bit<1>  job_hit;
    @field_list(1) bit<16> world;
    bit<64> full_mask;                         // ranks 0..world-1
    bit<32> slot_lo;
    bit<16> slot_count;
    @field_list(1) bit<16> group;
    @field_list(1) bit<16> job_index;
    bit<1>  worker_hit;
    bit<16> worker_rank;
    bit<16> worker_member;                     // rank - rank_lo at a child (run_tracker nonce)
    bit<1>  rank_known;
    @field_list(1) bit<64> rank_bit;
    // indices
    @field_list(1) bit<32> pool_slot;
    @field_list(1) bit<32> version_index;
    bit<32> value_index;
    // use_checker.p4, count_checker.p4, bitmap_checker.p4, workers_counter.p4
    bit<1>  begin;
    bit<1>  stale;
    @field_list(1) bit<16> held_count;
    bit<1>  count_ok;
    bit<1>  seen;
    bit<32> seen_set_lo;                       // TNA: the rank's bit to set in seen_lo, or 0
    bit<32> seen_set_hi;                       // TNA: likewise in seen_hi
    bit<1>  complete;
    bit<1>  counted;
    bit<16> remaining;
    // next_step_selector.p4
    @field_list(1) bit<8>  outcome;
    @field_list(1) bit<1>  last;
    @field_list(1) bit<8>  update;
    @field_list(1) bit<8>  lanes;
    @field_list(1) bit<8>  exp;
    @field_list(1) bit<8>  packet_flags;       // the packet's own: OVERFLOW, non-finite kinds
    bit<1>  recirculated;                      // TNA: arrived with a bridge header
    bit<9>  ingress_port;                      // TNA: the port of pass 0
    bit<9>  cpu_port;                          // TNA: switch_config's (v1model: CPU_PORT)
    @field_list(1) bit<8>  result_flags;       // the version's flags register (§5.4)
    // run_tracker.p4 (and its reads for probe_handler.p4)
    bit<1>  admitted;                          // the message's session is the run's
    bit<1>  run_open;
    bit<1>  run_opened;                        // this Join opened the run
    @field_list(1) bit<32> run_session;        // the run's session
    bit<1>  shape_ok;                          // this Join has the run's lane shape
    bit<32> join_shape;                        // TNA: the Join's {slot_count, count}
    bit<32> join_neg_nonce;                    // TNA: 0 - the Join's nonce (open_run)
    bit<1>  run_end;                           // a second pass ends the run
    bit<32> run_mask_lo;                       // TNA: the joined/left words' mask, ranks 0-31
    bit<32> run_mask_hi;                       // TNA: likewise, ranks 32-63
    bit<1>  parent_take;                       // TNA: a parent's JoinReply's session is kept
    bit<1>  parent_mark;                       // TNA: it marks the parent's COMPLETE
    // probe_handler.p4
    bit<1>  in_session;                        // the slot version holds a use of this run
    bit<32> held_seq;
    bit<64> seen_word;
    // join_handler.p4, run_tracker.p4
    bit<64> joined;
    bit<1>  join_complete;
    bit<1>  join_completes;
    // reply_builder.p4
    bit<8>  abort_reason;
    bit<16> abort_detail;
    bit<32> abort_session;
    // The Abort a child owes its parent (§7; run_tracker.p4 sets it, the egress writes
    // it into the clone): the reason its run ended, the parent run's session.
    @field_list(2) bit<8>  up_reason;
    @field_list(2) bit<32> up_session;
    bit<4>  up_kind;                           // TNA: 0xF, the mirror header's kind
    bit<4>  up_bridged;                        // TNA: the mirrored packet has a bridge header
    bit<10> up_mirror;                         // TNA: the mirror session (the parent's port)
    bit<1>  abort_own_run;                     // TNA: a parent's Abort names the child's run
    bit<32> echo_session;                      // TNA: the session `parent` forgot (keep_echo)
    @field_list(1) bit<16> reply_len;
    // the switch_config table
    @field_list(2) bit<48> switch_mac;
    @field_list(2) bit<32> switch_ip;
    bit<32> epoch;
    bit<16> max_count;                         // at most MAX_COUNT
}

#endif
