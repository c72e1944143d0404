#!/usr/bin/env python3
"""Send each vector's frame into BMv2 and compare what comes out with the model.

usage: replay.py EXPECTED HOST_IF...   (run inside the replay namespace, as root)

EXPECTED is the output of `cargo run -p switchml-p4model --bin expected`:
    [name]
    in <port> <hex frame>
    out <port> <hex frame>      (zero or more)
HOST_IF i is the host end of switch port i. Standard library only (AF_PACKET sockets).
Vectors go one at a time, in file order, so switch state carries over as in the model.
Replicas may leave in any order: outputs are compared as sorted lists of (port, frame).
A StatusReply's 29 counters are zero on BMv2 (the data plane cannot read its counters;
p4/README.md, known gaps), so the model's are zeroed before comparing.
"""
import select
import socket
import sys
import time

QUIET = 0.3  # seconds without a frame after which a vector's answers are complete
DATAGRAM = 14 + 20 + 8  # Ethernet, IPv4, UDP
STATUS_REPLY = 0x16
COUNTERS = range(DATAGRAM + 20, DATAGRAM + 252)  # protocol.md §3.8: 29 u64


def as_p4_sends(frame):
    """The frame as the P4 program sends it: a StatusReply's counters zeroed."""
    if len(frame) >= COUNTERS.stop and frame[DATAGRAM:DATAGRAM + 2] == bytes([1, STATUS_REPLY]):
        frame = frame[:COUNTERS.start] + bytes(len(COUNTERS)) + frame[COUNTERS.stop:]
    return frame


def load(path):
    vectors, v = [], None
    for line in open(path):
        line = line.strip()
        if line.startswith("["):
            v = {"name": line[1:-1], "out": []}
            vectors.append(v)
        elif line.startswith("in "):
            _, port, frame = line.split()
            v["in"] = (int(port), bytes.fromhex(frame))
        elif line.startswith("out "):
            _, port, frame = line.split()
            v["out"].append((int(port), as_p4_sends(bytes.fromhex(frame))))
    return vectors


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    vectors = load(sys.argv[1])
    socks = []
    for ifname in sys.argv[2:]:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        s.bind((ifname, 0))
        socks.append(s)
    failures = 0
    for v in vectors:
        port, frame = v["in"]
        socks[port].send(frame)
        got, deadline = [], time.time() + QUIET
        while time.time() < deadline:
            ready, _, _ = select.select(socks, [], [], max(0.0, deadline - time.time()))
            for s in ready:
                data, addr = s.recvfrom(65535)
                if addr[2] == socket.PACKET_OUTGOING:
                    continue  # our own transmission
                got.append((socks.index(s), data))
                deadline = time.time() + QUIET
        if sorted(got) != sorted(v["out"]):
            failures += 1
            print(f"[{v['name']}] differs", file=sys.stderr)
            for p, f in sorted(v["out"]):
                print(f"  model out {p} {f.hex()}", file=sys.stderr)
            for p, f in sorted(got):
                print(f"  bmv2  out {p} {f.hex()}", file=sys.stderr)
    print(f"{len(vectors) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
