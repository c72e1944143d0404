// switchml-rs P4: constants shared by the v1model and TNA programs (docs/protocol.md).
// Their Rust twins: switchml_p4model::{VALUES_PER_PASS, MAX_BLOCKS, MAX_PASSES, MAX_COUNT} and
// switchml_core::switch::DropReason::ALL (the drop counter index order).
#ifndef _SWITCHML_CONSTANTS_P4_
#define _SWITCHML_CONSTANTS_P4_

// Sizes: what fits one Tofino 1 pipe (p4/README.md, "Resources").
#define VALUES_PER_PASS 16                        // the value registers of one pass
#define VALUE_SHIFT 4                             // log2(VALUES_PER_PASS)
#define MAX_BLOCKS 16                             // blocks of VALUES_PER_PASS in MAX_COUNT
#define BLOCK_BITS 4                              // log2(MAX_BLOCKS)
#define MAX_PASSES 31                             // 2 x MAX_BLOCKS - 1: consume, harvest
#define POOL_SLOTS 1024
#define POOL_VERSIONS 2048                        // POOL_SLOTS x 2 versions
#define POOL_VALUE_CELLS 32768                    // POOL_VERSIONS x MAX_BLOCKS
#define MAX_JOBS 64
#define MAX_WORKERS 1024
#define RUN_NONCES 4096                           // MAX_JOBS x 64 ranks (run_tracker.p4)
#define LANE_ALIGNMENTS 7262                      // TNA: aligned lanes of POOL_SLOTS
#define MAX_BITMAP 128                            // bitmap bytes: 1,024 ranks (§3.3)
#define BITMAP_LEAD 127                           // bitmap_writer.p4: zero bytes before,
#define BITMAP_BODY 9                             // the 64 members shifted by rank_lo mod 8,
#define BITMAP_TAIL 119                           // zero bytes after (a child switch's, §7)

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_UDP = 17;
const bit<16> SWITCHML_PORT = 0xBEE0;             // 48864, protocol.md §1
const bit<8>  PROTOCOL_VERSION = 1;
const bit<16> MAX_COUNT = 256;                    // VALUES_PER_PASS x MAX_BLOCKS; the
                                                  // switch_config table's max_count may be lower
const bit<16> RANK_ALL = 0xFFFF;

// Message types (protocol.md §2).
const bit<8> TYPE_CONTRIBUTION = 0x01;
const bit<8> TYPE_RESULT       = 0x02;
const bit<8> TYPE_JOIN         = 0x10;
const bit<8> TYPE_JOIN_REPLY   = 0x11;
const bit<8> TYPE_PROBE        = 0x12;
const bit<8> TYPE_PROBE_REPLY  = 0x13;
const bit<8> TYPE_ABORT        = 0x14;
const bit<8> TYPE_STATUS       = 0x15;
const bit<8> TYPE_STATUS_REPLY = 0x16;
const bit<8> TYPE_LEAVE        = 0x17;
const bit<8> TYPE_COOKIE       = 0x18;

// Data flags (protocol.md §3.1), JoinReply flags (§3.3), StatusReply flags (§3.8).
const bit<8> FLAG_OVERFLOW   = 0x01;
const bit<8> FLAG_RETRANSMIT = 0x02;
// POS_INF 0x04, NEG_INF 0x08 and NAN 0x10: the non-finite kinds (§5.4), and CONGESTED 0x20
// (§6.3): the bits every switch ORs into the Result; with OVERFLOW, the bits a slot version
// keeps (overflow_flag.p4). These programs pass a worker's CONGESTED on, and also set it on
// each copy of a Result that leaves by a port whose egress queue is deep
// (congestion_marker.p4; the copy only: the slot version keeps the workers' marks).
const bit<8> FLAG_CONGESTED  = 0x20;
const bit<8> FLAG_CARRIED    = 0x3C;
const bit<8> FLAG_STICKY     = 0x3D;
const bit<8> JOIN_COMPLETE   = 0x01;
// StatusReply flags 0x01 ALL_JOINED, 0x02 RUN_OPEN: the controller's, which answers Status
// (protocol.md §4.2).

// Abort reasons (protocol.md §3.6).
const bit<8> ABORT_UNKNOWN_JOB         = 1;
const bit<8> ABORT_UNKNOWN_RANK        = 2;
const bit<8> ABORT_WORLD_MISMATCH      = 3;
const bit<8> ABORT_SLOT_RANGE          = 4;
const bit<8> ABORT_COUNT_TOO_LARGE     = 5;
// 6: Shutdown, sent only by the control plane's own Aborts, never by the data plane.
#ifdef SWITCHML_TIERS
const bit<8> ABORT_WORKER_FAILED       = 7;   // only a child's Abort up says it (§7)
#endif
// 8: BadKey, sent only by the controller, which checks a Join's tag (protocol.md §4.2).
const bit<8> ABORT_RANK_RESTARTED      = 9;
const bit<8> ABORT_LANE_MISMATCH       = 10;
const bit<8> ABORT_CHUNK_MISMATCH      = 11;
const bit<8> ABORT_SESSION_ENDED       = 12;
const bit<8> ABORT_LANE_COUNT_MISMATCH = 14;
const bit<8> ABORT_PARENT_FAILED       = 15;
const bit<16> ABORT_NAMES_NONE         = 0xFFFF;    // detail naming no rank or member

// Slot states in a ProbeReply (protocol.md §3.5).
const bit<8> STATE_IDLE = 0;
const bit<8> STATE_COLLECTING = 1;
const bit<8> STATE_COMPLETE = 2;

// Drop reasons: the index of the `drops` counter, in DropReason::ALL order.
typedef bit<8> drop_reason_t;
const drop_reason_t DROP_NONE            = 0xFF;
const drop_reason_t DROP_MALFORMED       = 0;
const drop_reason_t DROP_UNKNOWN_TYPE    = 1;
const drop_reason_t DROP_UNEXPECTED_TYPE = 2;
const drop_reason_t DROP_UNKNOWN_JOB     = 3;
const drop_reason_t DROP_UNKNOWN_RANK    = 4;
const drop_reason_t DROP_SLOT_RANGE      = 5;
const drop_reason_t DROP_COUNT_TOO_LARGE = 6;
const drop_reason_t DROP_BAD_VERSION     = 7;
const drop_reason_t DROP_STALE           = 8;
const drop_reason_t DROP_DUPLICATE       = 9;
const drop_reason_t DROP_COUNT_MISMATCH  = 10;
// 11: OutputTooSmall, never in P4 (the model's buffer check).
const drop_reason_t DROP_BAD_SESSION     = 12;
// 13: Oversized and 14: BadSource, never in P4 (counted by software adapters).
#define DROP_CLASSES 15

// What the validator found (validator.p4).
const bit<8> MSG_NONE = 0;
const bit<8> MSG_CONTRIBUTION = 1;
const bit<8> MSG_JOIN = 2;
const bit<8> MSG_PROBE = 3;
const bit<8> MSG_ABORT = 4;
const bit<8> MSG_STATUS = 5;
const bit<8> MSG_LEAVE = 6;
const bit<8> MSG_RESULT = 7;                      // from a child's parent (§7)
const bit<8> MSG_JOIN_REPLY = 8;                  // likewise
const bit<8> MSG_PARENT_ABORT = 9;                // an Abort of a child's parent's job
const bit<8> MSG_COOKIE = 10;                     // a parent's Cookie (§3.10): the controller's

// Where a job sits in a tree of switches (tier_selector.p4, protocol.md §7).
const bit<8> TIER_FLAT = 0;
const bit<8> TIER_PARENT = 1;
const bit<8> TIER_CHILD = 2;

// What the value, exponent and overflow registers do (processor.p4).
const bit<8> UPDATE_NONE = 0;
const bit<8> UPDATE_LOAD = 1;
const bit<8> UPDATE_ADD  = 2;
const bit<8> UPDATE_READ = 3;

// The fate of a Contribution (next_step_selector.p4).
const bit<8> OUTCOME_NONE          = 0;
const bit<8> OUTCOME_RETRANSMIT    = 1;
const bit<8> OUTCOME_DUPLICATE     = 2;
const bit<8> OUTCOME_COUNT_MISMATCH = 3;
const bit<8> OUTCOME_AGGREGATE     = 4;
const bit<8> OUTCOME_STORE         = 5;       // a parent's Result, stored at a child (§7)

// Job event counters (job_counters.p4): one counter array each.
// The verdict (next_step_selector.p4).
const bit<8> VERDICT_DROP        = 0;
const bit<8> VERDICT_CONSUME     = 1;
const bit<8> VERDICT_UNICAST     = 2;
const bit<8> VERDICT_MULTICAST   = 3;
const bit<8> VERDICT_RECIRCULATE = 4;
const bit<8> VERDICT_UP          = 5;         // to a child's parent switch (§7)
const bit<8> VERDICT_TO_CPU      = 6;         // to the controller, behind packet_in (§4.2)
const bit<8> VERDICT_FORWARD     = 7;         // the controller's answer, out as it is

// The session of a run opened by a Join of `nonce` after `runs` runs of its job: the nonce
// plus the runs before, 1 where that wraps to 0, which means no run (protocol.md §4.1;
// run_tracker.rs session_of in the model).
bit<32> session_of(in bit<32> nonce, in bit<32> runs) {
    bit<32> s = nonce + runs;
    return (s == 0) ? 32w1 : s;
}

// Whether two 64-bit bitmaps differ, as one 32-bit word to test against 0 (a Tofino
// gateway compares a field of at most 32 bits with a constant; BMv2 does not mind).
bit<32> differs(in bit<64> a, in bit<64> b) {
    bit<64> x = a ^ b;
    return x[63:32] | x[31:0];
}

#endif
