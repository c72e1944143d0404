#!/usr/bin/env python3
"""Write the golden wire vectors (tests/vectors/wire.txt) to stdout.

    python3 tests/vectors/gen_wire.py > tests/vectors/wire.txt

Deterministic (no randomness, no dependencies) and independent of the Rust code: every byte
is packed here from the layouts of docs/protocol.md §2-3 (with the job credential and run
sessions of §4.1), so the vectors check the Rust encoder rather than echo it. The format is
described in README.md next to this file.
"""

import hashlib
import hmac
import struct
import sys

VERSION = 1
RANK_ALL = 0xFFFF
I32_MIN = -(2**31)
I32_MAX = 2**31 - 1

TYPES = {
    "contribution": 0x01,
    "result": 0x02,
    "join": 0x10,
    "join_reply": 0x11,
    "probe": 0x12,
    "probe_reply": 0x13,
    "abort": 0x14,
    "status": 0x15,
    "status_reply": 0x16,
    "leave": 0x17,
    "cookie": 0x18,
}


def tag(key, label, covered):
    """protocol.md §4.2: HMAC-SHA-256 keyed with the key's 8 big-endian bytes, over the
    label and the covered bytes, truncated to 16 bytes."""
    mac = hmac.new(struct.pack(">Q", key), label + covered, hashlib.sha256)
    return mac.digest()[:16]
REASONS = {
    1: "unknown_job",
    2: "unknown_rank",
    3: "world_mismatch",
    4: "slot_range",
    5: "count_too_large",
    6: "shutdown",
    7: "worker_failed",
    8: "bad_key",
    9: "rank_restarted",
    10: "lane_mismatch",
    11: "chunk_mismatch",
    12: "session_ended",
    13: "wrong_shard",
    14: "lane_count_mismatch",
    15: "parent_failed",
    17: "rank_silent",
    18: "rank_refused",
}
STATES = {0: "idle", 1: "collecting", 2: "complete"}

out = []


def emit(line=""):
    out.append(line)


def hexbytes(b):
    return " ".join(f"{x:02x}" for x in b)


def bytes_lines(b, header_len):
    """One line if short; else the fixed part, then 32 bytes (8 values) a line."""
    if len(b) <= 32:
        return [hexbytes(b)]
    lines = [hexbytes(b[:header_len])]
    for i in range(header_len, len(b), 32):
        lines.append(hexbytes(b[i : i + 32]))
    return lines


def prefix(t, job, rank, version=VERSION):
    return struct.pack(">BBHH", version, t, job, rank)


def vector(name, meaning, fields, b, header_len):
    emit(f"[{name}]")
    emit(f"meaning: {meaning}")
    # A long value list goes on a `fields:` line of its own.
    head = [(k, v) for k, v in fields if not (k == "values" and v.count(",") >= 8)]
    tail = [(k, v) for k, v in fields if (k, v) not in head]
    emit("fields: " + " ".join(f"{k}={v}" for k, v in head))
    for k, v in tail:
        emit(f"fields: {k}={v}")
    for line in bytes_lines(b, header_len):
        emit(f"bytes: {line}")
    emit()


def invalid(name, meaning, error, b):
    emit(f"[{name}]")
    emit(f"meaning: {meaning}")
    emit(f"expect: error {error}")
    if len(b) == 0:
        emit("bytes:")
    for line in bytes_lines(b, 24):
        if line:
            emit(f"bytes: {line}")
    emit()


# --- encoders -------------------------------------------------------------------------------


def data(kind, job, rank, slot, ver, flags, seq, exp, session, values, count=None):
    count = len(values) if count is None else count
    b = prefix(TYPES[kind], job, rank)
    b += struct.pack(">HBBHIBBHI", slot, ver, flags, count, seq, exp, 0, 0, session)
    b += b"".join(struct.pack(">i", v) for v in values)
    fields = [
        ("type", kind),
        ("job", job),
        ("rank", rank),
        ("slot", slot),
        ("ver", ver),
        ("flags", f"0x{flags:02x}"),
        ("count", count),
        ("seq", seq),
        ("exp", exp),
        ("session", session),
        ("values", ",".join(str(v) for v in values)),
    ]
    return fields, b


def join(job, rank, world, slot_lo, slot_count, count, lanes, nonce, cookie, key):
    b = prefix(TYPES["join"], job, rank)
    b += struct.pack(">HHHHHIQ", world, slot_lo, slot_count, count, lanes, nonce, cookie)
    t = tag(key, b"switchml-rs v1 join\0", b)
    b += t
    fields = [
        ("type", "join"),
        ("job", job),
        ("rank", rank),
        ("world", world),
        ("slot_lo", slot_lo),
        ("slot_count", slot_count),
        ("count", count),
        ("lanes", lanes),
        ("nonce", nonce),
        ("cookie", cookie),
        ("tag", "0x" + t.hex()),
    ]
    return fields, b


def bitmap(ranks, world):
    b = bytearray((world + 7) // 8)
    for r in ranks:
        b[r // 8] |= 1 << (r % 8)
    return bytes(b)


def join_reply(
    job, rank, world, flags, max_count, epoch, slot_count, session, nonce, lane_slots, count, joined,
    shards=0,
):
    b = prefix(TYPES["join_reply"], job, rank)
    b += struct.pack(
        ">HBBHIHHIIHH",
        world, flags, shards, max_count, epoch, slot_count, len(joined), session, nonce,
        lane_slots, count,
    )
    b += joined
    fields = [
        ("type", "join_reply"),
        ("job", job),
        ("rank", rank),
        ("world", world),
        ("flags", f"0x{flags:02x}"),
        ("shards", shards),
        ("max_count", max_count),
        ("epoch", epoch),
        ("slot_count", slot_count),
        ("session", session),
        ("nonce", nonce),
        ("lane_slots", lane_slots),
        ("count", count),
        ("joined", "0x" + joined.hex()),
    ]
    return fields, b


def probe(job, rank, slot, ver, seq, session, flags=0):
    b = prefix(TYPES["probe"], job, rank)
    b += struct.pack(">HBBHII", slot, ver, flags, 0, seq, session)
    fields = [
        ("type", "probe"),
        ("job", job),
        ("rank", rank),
        ("slot", slot),
        ("ver", ver),
        ("flags", f"0x{flags:02x}"),
        ("seq", seq),
        ("session", session),
    ]
    return fields, b


def probe_reply(job, rank, slot, ver, state, remaining, seq, epoch, world, seen, session):
    b = prefix(TYPES["probe_reply"], job, rank)
    b += struct.pack(
        ">HBBHIIHHI", slot, ver, state, remaining, seq, epoch, world, len(seen), session
    )
    b += seen
    fields = [
        ("type", "probe_reply"),
        ("job", job),
        ("rank", rank),
        ("slot", slot),
        ("ver", ver),
        ("state", STATES.get(state, f"0x{state:02x}")),
        ("remaining", remaining),
        ("seq", seq),
        ("epoch", epoch),
        ("world", world),
        ("session", session),
        ("seen", "0x" + seen.hex()),
    ]
    return fields, b


def abort(job, rank, reason, detail, epoch, session):
    b = prefix(TYPES["abort"], job, rank)
    b += struct.pack(">BBHHII", reason, 0, detail, 0, epoch, session)
    fields = [
        ("type", "abort"),
        ("job", job),
        ("rank", rank),
        ("reason", REASONS.get(reason, f"0x{reason:02x}")),
        ("detail", detail),
        ("epoch", epoch),
        ("session", session),
    ]
    return fields, b


def leave(job, rank, session):
    b = prefix(TYPES["leave"], job, rank) + struct.pack(">HI", 0, session)
    return [("type", "leave"), ("job", job), ("rank", rank), ("session", session)], b


def status(job, rank, nonce, cookie, key):
    b = prefix(TYPES["status"], job, rank) + struct.pack(">HIQ", 0, nonce, cookie)
    t = tag(key, b"switchml-rs v1 status\0", b)
    b += t
    fields = [
        ("type", "status"),
        ("job", job),
        ("rank", rank),
        ("nonce", nonce),
        ("cookie", cookie),
        ("tag", "0x" + t.hex()),
    ]
    return fields, b


def cookie(job, rank, nonce, value):
    b = prefix(TYPES["cookie"], job, rank) + struct.pack(">HIQ", 0, nonce, value)
    fields = [
        ("type", "cookie"),
        ("job", job),
        ("rank", rank),
        ("nonce", nonce),
        ("cookie", value),
    ]
    return fields, b


def status_reply(job, rank, world, flags, slot_count, epoch, counters, joined, shards=0):
    b = prefix(TYPES["status_reply"], job, rank) + struct.pack(
        ">HBBHIHH", world, flags, shards, slot_count, epoch, len(joined), 0
    )
    b += b"".join(struct.pack(">Q", c) for c in counters) + joined
    fields = [
        ("type", "status_reply"),
        ("job", job),
        ("rank", rank),
        ("world", world),
        ("flags", f"0x{flags:02x}"),
        ("shards", shards),
        ("slot_count", slot_count),
        ("epoch", epoch),
        ("joined", "0x" + joined.hex()),
        ("counters", ",".join(str(c) for c in counters)),
    ]
    return fields, b


def unknown(msg_type, job, rank, body):
    b = prefix(msg_type, job, rank) + body
    fields = [
        ("type", "unknown"),
        ("msg_type", f"0x{msg_type:02x}"),
        ("job", job),
        ("rank", rank),
        ("body", "0x" + body.hex()),
    ]
    return fields, b


def with_byte(b, i, v):
    b = bytearray(b)
    b[i] = v
    return bytes(b)


def i32(x):
    """Wrap to int32."""
    x &= 0xFFFFFFFF
    return x - 2**32 if x >= 2**31 else x


# --- the vectors ----------------------------------------------------------------------------

emit("# Golden vectors for the switchml-rs wire protocol, version 1 (docs/protocol.md §2-3).")
emit("# Generated by tests/vectors/gen_wire.py; do not edit by hand. Format: README.md.")
emit()
emit("# ---- Contribution (0x01) and Result (0x02) ----")
emit()

SESSION = 0x0A0B0C0D
# The nonce of the Join the JoinReplies and the Join refusals answer.
JOIN_NONCE = 0x1234ABCD

f, b = data("contribution", 7, 3, 5, 1, 0x02, 9, 130, SESSION, [1, -2])
vector(
    "contribution_k2_retransmit",
    "Contribution from rank 3 of job 7, slot 5, version 1, resent, 2 values, in session"
    " 0x0a0b0c0d",
    f, b, 24,
)

f, b = data("contribution", 7, 0, 0, 0, 0x00, 0, 133, 1, [])
vector(
    "contribution_priming",
    "Priming Contribution from rank 0 of job 7, slot 0, use 0, session 1: no values, only"
    " the biased exponent 133 (e = 6) of the first block",
    f, b, 24,
)

f, b = data("result", 7, RANK_ALL, 0, 0, 0x00, 0, 134, 1, [])
vector(
    "result_priming_multicast",
    "Result of a priming use, multicast to every rank of job 7 in session 1: the maximum"
    " exponent 134",
    f, b, 24,
)

f, b = data("contribution", 7, 1, 2, 0, 0x00, 4, 0, 0, [5])
vector(
    "contribution_session_0",
    "Contribution in session 0, which no run has: it parses (the switch drops it as"
    " bad_session)",
    f, b, 24,
)

k64 = [i if i % 2 == 0 else -i for i in range(62)] + [I32_MIN, I32_MAX]
f, b = data("contribution", 1, 2, 17, 1, 0x00, 1, 140, SESSION, k64)
vector(
    "contribution_k64",
    "Contribution, k = 64, from rank 2 of job 1, slot 17, use 1; value i is i for even i,"
    " -i for odd i, then i32::MIN and i32::MAX",
    f, b, 24,
)

f, b = data("result", 1, 2, 17, 1, 0x02, 1, 140, SESSION, k64)
vector(
    "result_k64_unicast_retransmit",
    "Result, k = 64, unicast to rank 2 of job 1 in answer to a resend (RETRANSMIT);"
    " values as in contribution_k64",
    f, b, 24,
)

k256 = [i32(i * 0x01010101) for i in range(256)]
f, b = data("contribution", 0x1234, 0x00FF, 0x0100, 0, 0x00, 0xFFFFFFFE, 127, 0xFFFFFFFF, k256)
vector(
    "contribution_k256",
    "Contribution, k = 256, from rank 255 of job 0x1234, slot 256, use 2^32-2, session"
    " 2^32-1; value i is the bytes ii ii ii ii (so 0, 16843009, ..., -1)",
    f, b, 24,
)

k256r = [I32_MAX - i if i % 2 == 0 else I32_MIN + i for i in range(256)]
f, b = data("result", 0x1234, RANK_ALL, 0x0100, 1, 0x01, 0xFFFFFFFF, 255, 0xFFFFFFFF, k256r)
vector(
    "result_k256_multicast_overflow",
    "Result, k = 256, multicast to every rank of job 0x1234, with OVERFLOW; value i is"
    " i32::MAX - i for even i, i32::MIN + i for odd i",
    f, b, 24,
)

f, b = data("result", 9, RANK_ALL, 3, 1, 0x01, 5, 128, 0x80000000, [I32_MAX, I32_MIN, 0, -1])
vector(
    "result_k4_multicast_overflow",
    "Result, k = 4, multicast to every rank of job 9, slot 3, use 5, session 2^31: an"
    " addition overflowed",
    f, b, 24,
)

f, b = data("contribution", 9, 1, 3, 0, 0x86, 4, 0, SESSION, [42])
vector(
    "contribution_unknown_flags",
    "Contribution with RETRANSMIT, POS_INF (0x04: its chunk held a +inf, which a switch ORs"
    " into its Result) and the unknown bit 0x80, which a parser keeps and a switch ignores",
    f, b, 24,
)

f, b = data("contribution", 9, 1, 3, 0, 0x14, 4, 128, SESSION, [0, 1 << 29, -5])
vector(
    "contribution_non_finite",
    "Contribution whose chunk held a +inf and a NaN (flags POS_INF 0x04 and NAN 0x10,"
    " protocol.md 5.4): each sent as 0, the finite values quantized as usual",
    f, b, 24,
)

f, b = data("result", 9, RANK_ALL, 3, 0, 0x0C, 4, 128, SESSION, [7, 1 << 29, -5])
vector(
    "result_non_finite_multicast",
    "Result multicast to every rank of job 9: the use's Contributions held a +inf and a -inf"
    " (POS_INF 0x04, NEG_INF 0x08), so every rank writes NaN over the chunk (5.4)",
    f, b, 24,
)

f, b = data("result", 9, 1, 3, 0, 0x12, 4, 128, SESSION, [7, 1 << 29, -5])
vector(
    "result_non_finite_retransmit",
    "Result unicast to rank 1, a resend's answer (RETRANSMIT 0x02) with NAN (0x10):"
    " every element of the chunk is NaN at the rank",
    f, b, 24,
)

f, b = data("contribution", 9, 1, 3, 0, 0x20, 4, 128, SESSION, [7, -5])
vector(
    "contribution_congested",
    "Contribution from rank 1 whose sender's path is congested (CONGESTED 0x20, protocol.md"
    " 6.3), which a switch ORs into its Result",
    f, b, 24,
)

f, b = data("result", 9, RANK_ALL, 3, 0, 0x20, 4, 128, SESSION, [7, -5])
vector(
    "result_congested_multicast",
    "Result multicast to every rank of job 9 with CONGESTED (0x20): some Contribution of the"
    " use was marked, or the switch marked it (6.3); every rank's controller reacts",
    f, b, 24,
)

emit("# ---- Join (0x10) and JoinReply (0x11) ----")
emit()

f, b = join(7, 3, 4, 8, 4, 256, 3, JOIN_NONCE, 0, 0x0123456789ABCDEF)
vector(
    "join",
    "Join from rank 3 of job 7: a world of 4, the lane drives slots 8..12 (lane 2 of the"
    " rank's 3) with k = 256; process nonce 0x1234abcd, no cookie yet, tagged with job key"
    " 0x0123456789abcdef",
    f, b, 44,
)

f, b = join(7, 3, 4, 8, 4, 256, 3, JOIN_NONCE, 0x0A0B0C0D0E0F1011, 0x0123456789ABCDEF)
vector(
    "join_with_cookie",
    "The same Join again with the switch's cookie 0x0a0b0c0d0e0f1011, tagged over it",
    f, b, 44,
)

f, b = join(7, 0, 4, 0, 4, 256, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF)
vector(
    "join_largest_nonce_and_cookie",
    "Join from rank 0 of job 7 with the largest lanes, nonce and cookie, tagged with key"
    " 0xffffffffffffffff",
    f, b, 44,
)

f, b = join(7, 1, 4, 4, 4, 256, 2, 1, 0, 0)
vector(
    "join_key_zero",
    "Join tagged with key 0 (valid, but guessable) and nonce 1",
    f, b, 44,
)

f, b = join_reply(
    7, 1, 4, 0x00, 1024, 0x01020304, 16, SESSION, JOIN_NONCE, 4, 256, bitmap([0, 1], 4)
)
vector(
    "join_reply_partial",
    "JoinReply to rank 1 of job 7, answering its Join of nonce 0x1234abcd: ranks 0 and 1 of"
    " 4 have joined session 0x0a0b0c0d, max_count 1024, epoch 0x01020304, 16 slots; the run"
    " agreed lanes of 4 slots and chunks of 256 values",
    f, b, 32,
)

f, b = join_reply(
    7, RANK_ALL, 12, 0x01, 1024, 0x01020304, 16, SESSION, JOIN_NONCE, 4, 256,
    bitmap(range(12), 12),
)
vector(
    "join_reply_complete",
    "JoinReply with COMPLETE, multicast to every rank of job 7: all 12 ranks joined"
    " (2-byte bitmap); the completing Join's nonce 0x1234abcd",
    f, b, 32,
)

vector(
    "join_reply_sharded",
    "JoinReply to rank 1 of job 7 from one shard of a switch of 4 (protocol.md §1.1):"
    " otherwise as join_reply_partial",
    *join_reply(
        7, 1, 4, 0x00, 1024, 0x01020304, 16, SESSION, JOIN_NONCE, 4, 256, bitmap([0, 1], 4),
        shards=4,
    ),
    32,
)

f, b = join_reply(
    2, 1023, 1024, 0x01, 16370, 0xFFFFFFFF, 65535, 0xFFFFFFFF, 0xFFFFFFFF, 65535, 16370,
    bitmap(range(1024), 1024), shards=255,
)
vector(
    "join_reply_world_1024",
    "JoinReply with COMPLETE to rank 1023 of job 2: the largest world, a 128-byte bitmap,"
    " the largest session and nonce, one lane of 65535 slots and chunks of 16370, from a"
    " switch of the most shards, 255",
    f, b, 32,
)

emit("# ---- Probe (0x12) and ProbeReply (0x13) ----")
emit()

f, b = probe(7, 2, 5, 1, 9, SESSION)
vector(
    "probe",
    "Probe from rank 2 of job 7 about slot 5 version 1, waiting for use 9 of session"
    " 0x0a0b0c0d",
    f, b, 20,
)

f, b = probe(7, 2, 5, 1, 9, SESSION, flags=0x01)
vector(
    "probe_result",
    "The same Probe with RESULT set: rank 2 lost use 9's Result and asks for it (only to a"
    " switch that offers PROBE_RESULTS; to any other the byte is reserved)",
    f, b, 20,
)

seen = bitmap([r for r in range(12) if r not in (2, 8, 11)], 12)
f, b = probe_reply(7, 2, 5, 1, 1, 3, 9, 42, 12, seen, SESSION)
vector(
    "probe_reply_collecting",
    "ProbeReply to rank 2 of job 7 in its session: slot 5 version 1 is collecting use 9,"
    " ranks 2, 8 and 11 of 12 are missing",
    f, b, 28,
)

f, b = probe_reply(7, 0, 0, 0, 0, 0, 0, 42, 4, bitmap([], 4), SESSION)
vector("probe_reply_idle", "ProbeReply: slot 0 version 0 of job 7 was never used", f, b, 28)

f, b = probe_reply(7, 3, 6, 0, 2, 0, 10, 42, 4, bitmap(range(4), 4), SESSION)
vector(
    "probe_reply_complete",
    "ProbeReply: slot 6 version 0 of job 7 completed use 10, every rank seen",
    f, b, 28,
)

f, b = probe_reply(7, 3, 6, 0, 7, 0, 10, 42, 4, bitmap(range(4), 4), SESSION)
vector(
    "probe_reply_unknown_state",
    "ProbeReply with slot state 7, unknown in version 1, kept as it is",
    f, b, 28,
)

emit("# ---- Abort (0x14) ----")
emit()

# reason: (rank, detail, epoch, session, what it answers). A refusal of a Join names the
# Join's nonce in its session field (protocol.md §3.6).
ABORTS = {
    1: (1, 0, 0xDEADBEEF, JOIN_NONCE, "a Join for a job the switch does not know"),
    2: (1, 8, 0xDEADBEEF, JOIN_NONCE, "a Join from a rank not below the world of 8"),
    3: (1, 8, 0xDEADBEEF, JOIN_NONCE, "a Join with another world than the registered 8"),
    4: (1, 64, 0xDEADBEEF, JOIN_NONCE, "a Join with a slot range outside the job's 64 slots"),
    5: (1, 1024, 0xDEADBEEF, JOIN_NONCE, "a Join with a chunk size over max_count 1024"),
    6: (RANK_ALL, 0, 0xDEADBEEF, SESSION, "nothing: the switch stops, multicast to the run"),
    7: (5, 3, 0, SESSION, "nothing: rank 5 gave up waiting for rank 3, in its session"),
    8: (1, 0, 0xDEADBEEF, JOIN_NONCE, "a Join whose key is not the job's"),
    9: (RANK_ALL, 2, 0xDEADBEEF, SESSION,
        "a Join of rank 2 as a new process: the run it ended, multicast"),
    10: (1, 4, 0xDEADBEEF, JOIN_NONCE, "a Join whose lane is not the 4 slots the run agreed"),
    11: (1, 256, 0xDEADBEEF, JOIN_NONCE,
         "a Join whose chunk size is not the 256 the run agreed"),
    12: (1, 0, 0xDEADBEEF, SESSION, "a Probe of a session that is not the job's run"),
    13: (1, 4, 0xDEADBEEF, JOIN_NONCE,
         "a Join of lane 1 at shard 0 of a switch of 4 shards (lane 1's is shard 1)"),
    14: (1, 2, 0xDEADBEEF, JOIN_NONCE,
         "a Join of a rank whose number of lanes is not the 2 the run agreed"),
    15: (RANK_ALL, 1, 0xDEADBEEF, SESSION,
         "nothing: a child switch tells its run that the parent's ended, naming child 1"),
    17: (RANK_ALL, 3, 0xDEADBEEF, SESSION,
         "nothing: the switch heard nothing from rank 3 for its dead interval, multicast"),
    18: (RANK_ALL, 2, 0xDEADBEEF, SESSION,
         "nothing: rank 2's Join was refused while the run gathered, multicast"),
}
for reason, name in REASONS.items():
    rank, detail, epoch, session, answers = ABORTS[reason]
    f, b = abort(7, rank, reason, detail, epoch, session)
    vector(
        f"abort_{name}",
        f"Abort {reason} ({name}) for job 7, rank {rank}, detail {detail}, session"
        f" {session:#x}: answers {answers}",
        f, b, 20,
    )

f, b = abort(7, 1, 0x2A, 0x1234, 0xDEADBEEF, 0)
vector("abort_unknown_reason", "Abort with reason 0x2a, unknown in version 1, kept", f, b, 20)

f, b = abort(7, 1, 0, 0, 0, 0)
vector("abort_reason_zero", "Abort with reason 0, unknown in version 1, kept", f, b, 20)

emit("# ---- Leave (0x17) ----")
emit()

f, b = leave(7, 2, 0x01020304)
vector("leave", "Leave: rank 2 of job 7 is done with session 0x01020304", f, b, 12)

f, b = leave(7, 0, 0)
vector("leave_session_0", "Leave naming session 0 (parses; the switch drops it)", f, b, 12)

emit("# ---- Status and StatusReply (switchml doctor) ----")
emit()

f, b = status(7, 0xFFFF, 0x5EED, 0, 0x0123456789ABCDEF)
vector(
    "status_job_7",
    "A Status request about job 7, nonce 0x5eed, no cookie yet, tagged with job key"
    " 0x0123456789abcdef",
    f, b, 36,
)

f, b = status(7, 0xFFFF, 0x5EED, 0x0A0B0C0D0E0F1011, 0x0123456789ABCDEF)
vector("status_with_cookie", "The same Status with the switch's cookie, tagged over it", f, b, 36)

f, b = cookie(7, 3, JOIN_NONCE, 0x0A0B0C0D0E0F1011)
vector(
    "cookie",
    "The switch's Cookie 0x0a0b0c0d0e0f1011 for rank 3 of job 7, answering nonce 0x1234abcd",
    f, b, 20,
)

# received, dropped, contributions, completions, retransmit_replies, duplicates, stale,
# rejected, joins, probes, aborts, overflows, runs, unauthorized, then the 15 drop classes
# (malformed, unknown_type, unexpected_type, unknown_job, unknown_rank, slot_range,
# count_too_large, bad_version, stale, duplicate, count_mismatch, output_too_small,
# bad_session, oversized, bad_source).
drops = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0]
f, b = status_reply(
    7, 0xFFFF, 10, 0x02, 16, 0x01020304,
    [100, 3, 40, 10, 2, 1, 0, 0, 12, 1, 0, 1 << 40, 3, 2] + drops, bitmap([0, 1, 2, 4, 9], 10),
)
vector(
    "status_reply_partial_join",
    "StatusReply for job 7: a run is open (RUN_OPEN), 0, 1, 2, 4 and 9 of 10 ranks joined"
    " it; 3 runs opened, 2 messages refused; drops: 1 malformed, 2 bad_session",
    f, b, 252,
)

drops = [i + 1 for i in range(15)]
f, b = status_reply(
    7, 0xFFFF, 4, 0x03, 16, 0x01020304,
    list(range(1, 15)) + drops, bitmap(range(4), 4), shards=3,
)
vector(
    "status_reply_all_joined",
    "StatusReply for job 7 from one shard of a switch of 3: every rank of 4 joined its open"
    " run (ALL_JOINED | RUN_OPEN); counter i is i + 1, every drop class distinct",
    f, b, 252,
)

emit("# ---- Unknown types: parsed and kept, dropped by the switch ----")
emit()

f, b = unknown(0x42, 7, 3, bytes([0xDE, 0xAD, 0xBE, 0xEF, 0x00]))
vector(
    "unknown_type_0x42",
    "A message of type 0x42, unknown in version 1, with a 5-byte body",
    f, b, 6,
)

f, b = unknown(0x00, 0, 0, b"")
vector("unknown_type_0x00_prefix_only", "Type 0x00, unknown, nothing after the prefix", f, b, 6)

emit("# ---- Invalid ----")
emit()

_, contribution = data("contribution", 7, 3, 5, 1, 0x02, 9, 130, SESSION, [1, -2])
_, join_b = join(7, 3, 4, 8, 4, 256, 3, JOIN_NONCE, 0, 0x0123456789ABCDEF)
_, jr = join_reply(
    7, RANK_ALL, 12, 0x01, 1024, 0x01020304, 16, SESSION, JOIN_NONCE, 4, 256,
    bitmap(range(12), 12),
)
_, probe_b = probe(7, 2, 5, 1, 9, SESSION)
_, pr = probe_reply(7, 2, 5, 1, 1, 3, 9, 42, 12, seen, SESSION)
_, abort_b = abort(7, 1, 3, 8, 0xDEADBEEF, JOIN_NONCE)
_, leave_b = leave(7, 2, 0x01020304)
_, status_b = status(7, 1, 0x5EED, 0, 0x0123456789ABCDEF)
_, cookie_b = cookie(7, 3, JOIN_NONCE, 0x0A0B0C0D0E0F1011)

invalid("empty", "An empty datagram", "truncated", b"")
invalid("prefix_truncated", "Five bytes: shorter than the common prefix", "truncated", join_b[:5])
invalid("version_0", "A Join with version 0", "version", with_byte(join_b, 0, 0))
invalid("version_2", "A Contribution with version 2", "version", with_byte(contribution, 0, 2))
invalid(
    "version_2_unknown_type",
    "An unknown type with version 2: the version is checked first",
    "version",
    prefix(0x42, 7, 3, version=2),
)
invalid(
    "contribution_header_truncated",
    "A Contribution cut inside its 24-byte header (no room for the session)",
    "truncated",
    contribution[:23],
)
_, priming_b = data("contribution", 7, 0, 0, 0, 0x00, 0, 133, 1, [])
invalid(
    "contribution_priming_20_bytes",
    "A priming Contribution (count 0) cut to 20 bytes: the session is part of every data"
    " header, so a priming chunk is 24 bytes",
    "truncated",
    priming_b[:20],
)
invalid(
    "contribution_values_truncated",
    "A Contribution that declares 2 values and carries 1",
    "truncated",
    contribution[:28],
)
invalid(
    "contribution_trailing_byte",
    "A Contribution with one byte after its 2 values",
    "trailing",
    contribution + b"\x00",
)
invalid("contribution_ver_2", "A Contribution with version 2 of the slot", "field ver",
        with_byte(contribution, 8, 2))
invalid("contribution_reserved_17", "A Contribution with reserved byte 17 set", "reserved",
        with_byte(contribution, 17, 0x01))
invalid("result_reserved_19", "A Result with reserved byte 19 set", "reserved",
        with_byte(with_byte(contribution, 1, 0x02), 19, 0x80))
invalid("join_16_bytes", "A Join of the layout before sessions: 16 bytes, no nonce or key",
        "truncated", join_b[:16])
invalid("join_28_bytes", "A Join of the layout before tags: 28 bytes, the key in the clear",
        "truncated", join_b[:28])
invalid("join_43_bytes", "A Join one byte short", "truncated", join_b[:43])
invalid("join_45_bytes", "A Join with one byte after it", "trailing", join_b + b"\x00")
invalid("join_lanes_0", "A Join of a rank with 0 lanes: every rank has at least one",
        "field lanes", join_b[:14] + b"\x00" * 2 + join_b[16:])
invalid("join_nonce_0", "A Join with nonce 0: every process has a non-zero nonce",
        "field nonce", join_b[:16] + b"\x00" * 4 + join_b[20:])
invalid("join_reply_bitmap_short", "A JoinReply that declares 2 bitmap bytes and carries 1",
        "truncated", jr[:33])
invalid(
    "join_reply_before_shape",
    "A JoinReply of the layout before the lane shape fields: 28 bytes and its 2-byte bitmap",
    "truncated",
    jr[:28] + jr[32:],
)
invalid("join_reply_bitmap_long", "A JoinReply with a byte after its 2-byte bitmap", "trailing",
        jr + b"\x00")
big = bytearray(jr[:32])
big[6:8] = struct.pack(">H", 1032)
big[18:20] = struct.pack(">H", 129)
invalid(
    "join_reply_bitmap_len_129",
    "A JoinReply with a 129-byte bitmap (1,032 ranks): over the 128-byte limit",
    "field bitmap_len",
    bytes(big) + b"\xff" * 129,
)
invalid("probe_ver_2", "A Probe about version 2 of a slot", "field ver", with_byte(probe_b, 8, 2))
invalid("probe_flag_unknown", "A Probe with flag bit 1 (byte 9) set: no such flag", "reserved",
        with_byte(probe_b, 9, 2))
invalid("probe_reserved_10", "A Probe with reserved byte 10 set", "reserved",
        with_byte(probe_b, 10, 1))
invalid("probe_16_bytes", "A Probe of the layout before sessions: 16 bytes", "truncated",
        probe_b[:16])
invalid("probe_reply_ver_3", "A ProbeReply about version 3 of a slot", "field ver",
        with_byte(pr, 8, 3))
invalid("probe_reply_truncated", "A ProbeReply cut inside its 28-byte fixed part", "truncated",
        pr[:27])
invalid("probe_reply_before_session",
        "A ProbeReply of the layout before sessions: 24 bytes and its 2-byte bitmap",
        "truncated", pr[:24] + pr[28:])
invalid("abort_reserved_7", "An Abort with reserved byte 7 set", "reserved",
        with_byte(abort_b, 7, 1))
invalid("abort_reserved_11", "An Abort with reserved byte 11 set", "reserved",
        with_byte(abort_b, 11, 1))
invalid("abort_16_bytes", "An Abort of the layout before sessions: 16 bytes", "truncated",
        abort_b[:16])
invalid("abort_trailing", "An Abort with 4 bytes after it", "trailing", abort_b + b"\x00" * 4)
invalid("leave_reserved_6", "A Leave with reserved byte 6 set", "reserved",
        with_byte(leave_b, 6, 1))
invalid("leave_11_bytes", "A Leave one byte short", "truncated", leave_b[:11])
invalid("leave_13_bytes", "A Leave with one byte after it", "trailing", leave_b + b"\x00")
invalid("status_reserved", "A Status with its reserved field set", "reserved",
        with_byte(status_b, 7, 1))
invalid("status_truncated", "A Status one byte short", "truncated", status_b[:35])
invalid("status_8_bytes", "A Status of the layout before tags: 8 bytes", "truncated",
        status_b[:8])
invalid("status_nonce_0", "A Status with nonce 0", "field nonce",
        status_b[:8] + b"\x00" * 4 + status_b[12:])
invalid("cookie_reserved", "A Cookie with its reserved field set", "reserved",
        with_byte(cookie_b, 7, 1))
invalid("cookie_0", "A Cookie of cookie 0, which means none", "field cookie",
        cookie_b[:12] + b"\x00" * 8)
invalid("cookie_trailing", "A Cookie with one byte after it", "trailing", cookie_b + b"\x00")

sys.stdout.write("\n".join(out).rstrip("\n") + "\n")
