#!/usr/bin/env python3
"""Send each vector's frame into BMv2 and compare every frame that comes out with the model.

usage: replay.py EXPECTED HOST_IF...   (run inside the replay namespace, as root)
       replay.py --cli-log LOG        (did simple_switch_CLI complain while loading a bed?)

EXPECTED is written by `cargo run -p switchml-p4model-harness --bin expected` (the wire vectors) or
`expected --scenarios DIR` (one file per switch scenario):
    [name]
    in <port> <hex frame>
    out <port> <hex frame>      (zero or more)
HOST_IF is the host end of a switch port: `IF` for port i, its position in the list, or
`PORT=IF` for another port (the CPU port: `64=hcpu`). Standard library only (AF_PACKET
sockets).

The replay plays the switch's controller (protocol.md §4.2; p4/README.md, "Joins and the
controller"): a Join, Status or Cookie comes out on the CPU port behind its packet_in header,
and the next vector (`[NAME/cpu]`) is the frame the model's controller sends back there
(packet_out, then the admitted Join or the controller's own answer, which BMv2 forwards as
it is). So every frame is compared byte for byte, a StatusReply's counters included: the
model's controller wrote them.

The first vector is `[liveness]`: a Probe for a job no bed has, which any running switch
answers. Without that answer nothing else is sent and the run fails (status 3): a switch
that did not load must never pass. Then vectors go one at a time, in file order, so switch
state carries over as in the model; after each, frames are collected on every port until
the ports stay quiet for QUIET seconds. Every frame counts: one the model does not send
(on any port), one it sends that BMv2 does not, and one whose bytes differ are failures.
Replicas may leave in any order: frames are compared as multisets of (port, frame).

Exit status: 0 every vector agrees; 1 some vector differs; 3 no switch answered (the
liveness check failed, or no vector that expects a frame got one); 2 usage.

`--cli-log LOG` prints every complaint in the output of simple_switch_CLI loading a bed's
tables (`cli_complaints`) and exits 1 if there is one, else 0: the CLI answers a command it
cannot parse, a table or action it does not know, or an entry it refuses with a line, not
with its exit status, so a mistyped command would otherwise load nothing and pass.
"""
import collections
import os
import select
import socket
import sys
import time

# Seconds without a frame after which a vector's answers are complete (REPLAY_QUIET: for the
# tests' fake switch, which answers at once).
QUIET = float(os.environ.get("REPLAY_QUIET", "0.3"))
LIVENESS = "liveness"

AGREE, DIFFER, USAGE, NO_SWITCH = 0, 1, 2, 3


# How simple_switch_CLI's answers that something went wrong start, after its prompts:
# cmd.Cmd's `*** Unknown syntax: ...`, runtime_CLI's `Error: ...` and `Invalid table
# operation (...)`, a failed Thrift connection's `Could not connect ...`, and an uncaught
# exception's traceback.
CLI_COMPLAINTS = ("***", "error", "invalid", "could not", "traceback", "exception")
PROMPT = "RuntimeCmd:"


def cli_complaints(text):
    """The lines of a simple_switch_CLI session's output that complain; [] if none."""
    complaints = []
    for line in text.splitlines():
        answer = line.strip()
        while answer.startswith(PROMPT):
            answer = answer[len(PROMPT):].strip()
        if answer.lower().startswith(CLI_COMPLAINTS) or "unknown syntax" in answer.lower():
            complaints.append(line)
    return complaints


def interfaces(args):
    """The switch ports of the HOST_IF arguments: {port: interface}."""
    ports = {}
    for i, arg in enumerate(args):
        port, sep, name = arg.partition("=")
        ports[int(port) if sep else i] = name if sep else arg
    return ports


def load(text):
    """The vectors of an EXPECTED file: dicts with name, in (port, frame), out [(port, frame)]."""
    vectors, v = [], None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            v = {"name": line[1:-1], "in": None, "out": []}
            vectors.append(v)
            continue
        kind, port, frame = line.split()
        if v is None or kind not in ("in", "out"):
            raise ValueError(f"line {n}: unexpected {line[:40]!r}")
        item = (int(port), bytes.fromhex(frame))
        if kind == "in":
            v["in"] = item
        else:
            v["out"].append(item)
    for v in vectors:
        if v["in"] is None:
            raise ValueError(f"[{v['name']}] has no `in` line")
    return vectors


def diff(expected, got):
    """Lines naming every frame missing from `got`, extra in it, or differing; [] if equal.

    Both are lists of (port, frame); order does not matter, multiplicity does.
    """
    want, have = collections.Counter(expected), collections.Counter(got)
    missing = sorted((want - have).elements())
    extra = sorted((have - want).elements())
    lines = []
    for port, frame in missing:
        lines.append(f"  missing: model out {port} {frame.hex()}")
    for port, frame in extra:
        lines.append(f"  extra:   bmv2  out {port} {frame.hex()}")
    return lines


def verdict(results):
    """Judge a run: `results` is [(vector, got)] in the order sent. Returns (status, report).

    A run fails with NO_SWITCH when the first vector is the liveness check and it was not
    answered exactly, or when some vector expects a frame and not one such vector got any:
    a switch that never answers must not pass on the vectors that expect nothing.
    """
    report = []
    if not results:
        return NO_SWITCH, ["no vectors were replayed"]
    first, got = results[0]
    if first["name"] == LIVENESS and diff(first["out"], got):
        report.append("the switch did not answer the liveness check (a Probe for an unknown job):")
        report += diff(first["out"], got)
        return NO_SWITCH, report
    answering = [(v, g) for v, g in results if v["out"] and v["name"] != LIVENESS]
    if answering and not any(g for _, g in answering):
        report.append(f"no answer at all: {len(answering)} vectors expect frames and none got one")
        return NO_SWITCH, report
    failed = 0
    for v, g in results:
        lines = diff(v["out"], g)
        if lines:
            failed += 1
            report.append(f"[{v['name']}] differs")
            report += lines
    report.append(f"{len(results) - failed} passed, {failed} failed")
    return (DIFFER if failed else AGREE), report


def capture(socks, port, frame, quiet=QUIET):
    """Send `frame` out of socks[port] ({port: socket}); return [(port, frame)] received
    until quiet."""
    socks[port].send(frame)
    port_of = {s: p for p, s in socks.items()}
    got, deadline = [], time.time() + quiet
    while time.time() < deadline:
        ready, _, _ = select.select(list(socks.values()), [], [], max(0.0, deadline - time.time()))
        for s in ready:
            data, addr = s.recvfrom(65535)
            if addr[2] == socket.PACKET_OUTGOING:
                continue  # our own transmission
            got.append((port_of[s], data))
            deadline = time.time() + quiet
    return got


def replay(vectors, exchange):
    """Send every vector through `exchange(port, frame) -> [(port, frame)]`, in order; stop
    after a failed liveness check. Returns [(vector, got)] for `verdict`."""
    results = []
    for v in vectors:
        results.append((v, exchange(*v["in"])))
        if v["name"] == LIVENESS and diff(v["out"], results[-1][1]):
            break  # verdict says why; nothing else is worth sending
    return results


def main(argv):
    if len(argv) == 3 and argv[1] == "--cli-log":
        with open(argv[2]) as f:
            complaints = cli_complaints(f.read())
        for line in complaints:
            print(line)
        return DIFFER if complaints else AGREE
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return USAGE
    with open(argv[1]) as f:
        vectors = load(f.read())
    socks = {}
    for port, ifname in interfaces(argv[2:]).items():
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        s.bind((ifname, 0))
        socks[port] = s
    status, report = verdict(replay(vectors, lambda port, frame: capture(socks, port, frame)))
    for line in report:
        print(line, file=sys.stderr if status else sys.stdout)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
