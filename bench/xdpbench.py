#!/usr/bin/env python3
"""The socket path against the AF_XDP path (issue 30), on veths in network namespaces.

One run, the paths alternated round by round (socket; socket with GSO/GRO off,
`SWITCHML_NO_GSO=1`; AF_XDP): a switch daemon (`switchml switch`, one
shard) in namespace xd-b-s (`--prefix` names them) and P ranks (`switchml worker`, one lane each) in xd-b-w0..,
every namespace on a bridge in xd-b-hub (10.78.0.0/24). The same job both ways: an
all-reduce of a 64 MiB int32 tensor (16 Mi elements), verified exact. Measured per job:

- the switch's CPU seconds (utime + stime of its process, /proc/PID/stat, from before the
  ranks start to after they end) and the ranks' (each rank's own `cpu_seconds` over its
  timed all-reduce), per GB of tensor all-reduced (per rank for the ranks);
- packets per second per core: datagrams in + out over those CPU seconds;
- the all-reduce time (the slowest rank's, over its --iterations all-reduces);
- the ksoftirqd threads' CPU over the job (veth delivery the kernel defers there).

With `--dialect p4app` the same phases for the original SwitchML's dialect
(`switchml switch --dialect p4app`, its workers `switchml worker --dialect p4app`, int32):
the dialect switch on its AF_PACKET socket (`socket`) against AF_XDP (`xdp`, the dialect's
ports steered, ARP on the AF_PACKET socket beside); packets are the frames the switch
received and sent, and "frames via AF_XDP" its `received_af_xdp + sent_af_xdp`. The ranks
use kernel UDP sockets either way (the dialect's worker has no AF_XDP path).

`--prefix` names the namespaces (`{prefix}-s`, `-hub`, `-w0`..) and the interfaces in them,
so that two benchmarks on one machine do not meet.

Root only. Prints a Markdown table and writes JSON lines (--out).
"""

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import time

PREFIX = "xd-b"
SUBNET = "10.78.0"
TICK = os.sysconf("SC_CLK_TCK")


def ip(*args, check=True):
    subprocess.run(["ip", *args], check=check, capture_output=True)


class Testbed:
    """The namespaces and veths; removed by close() (called from finally and on signals)."""

    def __init__(self, ranks):
        self.names = []
        self.close()  # leftovers of an interrupted run
        hub = f"{PREFIX}-hub"
        ip("netns", "add", hub)
        self.names.append(hub)
        bridge = f"{PREFIX}-br"
        ip("-n", hub, "link", "add", bridge, "type", "bridge")
        ip("-n", hub, "link", "set", bridge, "up")
        for i, host in enumerate(["s"] + [f"w{r}" for r in range(ranks)]):
            ns = f"{PREFIX}-{host}"
            ip("netns", "add", ns)
            self.names.append(ns)
            port = f"{PREFIX}-p{i}"
            ip("-n", hub, "link", "add", port, "type", "veth", "peer", "name", PREFIX, "netns", ns)
            ip("-n", hub, "link", "set", port, "master", bridge, "up")
            ip("-n", ns, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", PREFIX)
            ip("-n", ns, "link", "set", PREFIX, "up")
            ip("-n", ns, "link", "set", "lo", "up")

    def close(self):
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(PREFIX + "-"):
                ip("netns", "del", name, check=False)


def proc_cpu(pid):
    """utime + stime of a process, seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def ksoftirqd_cpu():
    total = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                if not f.read().startswith("ksoftirqd"):
                    continue
            total += proc_cpu(pid)
        except OSError:
            pass
    return total


PATHS = ["socket", "socket-no-gso", "xdp"]
# The dialect switch's `--io`: socket is its AF_PACKET socket.
P4APP_PATHS = ["socket", "xdp"]


def measure(sw_args, started, rank_args, env, limit):
    """Start the switch (`sw_args`) in its namespace and wait for the line that holds
    `started`; run the ranks (`rank_args[r]`, each in its namespace) to their end; stop the
    switch. Returns its first line, the ranks' last JSON lines, the switch's stdout and
    stderr after the first line, and its CPU and ksoftirqd's over the ranks' run."""
    switch = subprocess.Popen(["ip", "netns", "exec", f"{PREFIX}-s", *sw_args], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = switch.stdout.readline()
        if started not in first:
            raise RuntimeError(f"switch did not start: {first} {switch.stderr.read()}")
        # `ip netns exec` execs the switch: the same pid.
        cpu0, soft0 = proc_cpu(switch.pid), ksoftirqd_cpu()
        workers = [subprocess.Popen(["ip", "netns", "exec", f"{PREFIX}-w{r}", *args], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for r, args in enumerate(rank_args)]
        reports = []
        for w in workers:
            out, err = w.communicate(timeout=limit)
            lines = [l for l in out.splitlines() if l.startswith("{")]
            if w.returncode != 0 or not lines:
                raise RuntimeError(f"rank failed ({w.returncode}): {out[-500:]} {err[-500:]}")
            reports.append(json.loads(lines[-1]))
        cpu1, soft1 = proc_cpu(switch.pid), ksoftirqd_cpu()
        switch.send_signal(signal.SIGINT)
        out, err = switch.communicate(timeout=30)
        return first, reports, out, err, cpu1 - cpu0, soft1 - soft0
    finally:
        if switch.poll() is None:
            switch.kill()
            switch.wait()


def run_job(binary, path, ranks, elements, iterations, key, limit):
    env = dict(os.environ, SWITCHML_JOB_KEY=key, RUST_LOG="warn")
    if path == "socket-no-gso":
        # The socket path one datagram per packet everywhere, as AF_XDP's copy mode is.
        env["SWITCHML_NO_GSO"] = "1"
    sw_args = [binary, "switch", "--bind", "0.0.0.0:48864", "--job", f"1:{ranks}",
               "--threads", "1", "--json"]
    if path == "xdp":
        sw_args += ["--io", "xdp", "--iface", PREFIX]
    rank_args = []
    for r in range(ranks):
        args = [binary, "worker", "--rank", str(r), "--world", str(ranks),
                "--switch", f"{SUBNET}.1:48864", "--job", "1", "--elements", str(elements),
                "--iterations", str(iterations),
                "--dtype", "i32", "--lanes", "1", "--window", "128", "--json"]
        if path == "xdp":
            args += ["--io", f"xdp:{PREFIX}"]
        rank_args.append(args)
    _, reports, out, err, cpu, soft = measure(sw_args, "listening", rank_args, env, limit)
    final = [json.loads(l) for l in out.splitlines() if l.startswith("{") and "stopped" in l]
    counters = final[-1]["counters"] if final else {}
    return {
        "path": path, "ranks": ranks, "elements": elements, "iterations": iterations,
        "switch_cpu": cpu, "ksoftirqd_cpu": soft,
        "rank_cpu": [r["cpu_seconds"] for r in reports],
        "seconds": max(r["seconds"] for r in reports),
        "verified": all(r["verified"] for r in reports),
        "rank_datagrams": sum(r["datagrams_sent"] + r["datagrams_received"] for r in reports),
        "rank_frames": sum(r.get("xdp_frames_sent", 0) + r.get("xdp_frames_received", 0)
                           for r in reports),
        "switch_datagrams": counters.get("received", 0) + counters.get("sent", 0),
        "switch_frames": counters.get("xdp_received", 0) + counters.get("xdp_sent", 0),
        "fell_back": "AF_XDP" in err and "instead" in err,
    }


# The dialect switch's address: not the switch namespace's own (10.78.0.1, where its gRPC
# control plane listens), as `--ip` requires.
P4APP_IP = "254"


def run_p4app_job(binary, path, ranks, elements, iterations, key, limit):
    """One job against the dialect switch on `path` (socket: AF_PACKET; xdp: AF_XDP)."""
    del key  # the dialect has no job key
    env = dict(os.environ, RUST_LOG="warn")
    sw_args = [binary, "switch", "--dialect", "p4app", "--iface", PREFIX,
               "--ip", f"{SUBNET}.{P4APP_IP}", "--control", f"{SUBNET}.1:50099", "--json",
               "--io", path]
    rank_args = [[binary, "worker", "--dialect", "p4app", "--rank", str(r),
                  "--world", str(ranks), "--switch", f"{SUBNET}.1:50099",
                  "--elements", str(elements), "--iterations", str(iterations),
                  "--dtype", "i32", "--count", "256", "--json"] for r in range(ranks)]
    first, reports, out, err, cpu, soft = measure(sw_args, "p4app", rank_args, env, limit)
    # The first line said it started; the last has the final counters.
    finals = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    counters = finals[-1] if finals else {}
    # The dialect's worker counts no datagrams: each rank sends one packet of 256 values
    # per slice and receives one result for it (lossless veths).
    packets = -(-elements // 256) * iterations
    return {
        "dialect": "p4app", "path": path, "ranks": ranks, "elements": elements,
        "iterations": iterations, "af_xdp_queues": json.loads(first).get("af_xdp_queues", 0),
        "switch_cpu": cpu, "ksoftirqd_cpu": soft,
        "rank_cpu": [r["cpu_seconds"] for r in reports],
        "seconds": max(r["seconds"] for r in reports),
        "verified": all(r["verified"] for r in reports),
        "rank_datagrams": 2 * packets * ranks,
        "rank_frames": 0,
        "switch_datagrams": counters.get("received", 0) + counters.get("sent", 0),
        "switch_frames": counters.get("received_af_xdp", 0) + counters.get("sent_af_xdp", 0),
        "fell_back": "AF_XDP" in err and "instead" in err,
    }


def table(results, elements, iterations):
    gb = elements * 4 * iterations / 1e9
    rows = {}
    for r in results:
        rows.setdefault((r["ranks"], r["path"]), []).append(r)
    print("| P | path | s per all-reduce | switch CPU-s/GB | ranks CPU-s/GB (per rank) |"
          " switch pkts/s/core | ranks pkts/s/core | ksoftirqd CPU-s | frames via AF_XDP |")
    print("|---|---|---|---|---|---|---|---|---|")
    med = lambda xs: sorted(xs)[len(xs) // 2]
    for (ranks, path), rs in sorted(rows.items()):
        sw = [r["switch_cpu"] / gb for r in rs]
        rk = [sum(r["rank_cpu"]) / ranks / gb for r in rs]
        sw_pps = [r["switch_datagrams"] / max(r["switch_cpu"], 1e-9) for r in rs]
        rk_pps = [r["rank_datagrams"] / max(sum(r["rank_cpu"]), 1e-9) for r in rs]
        frames = [r["switch_frames"] / max(r["switch_datagrams"], 1) for r in rs]
        t = [r["seconds"] / iterations for r in rs]
        print(f"| {ranks} | {path} | {med(t):.2f} ({min(t):.2f}–{max(t):.2f}) | "
              f"{med(sw):.2f} ({min(sw):.2f}–{max(sw):.2f}) | {med(rk):.2f} ({min(rk):.2f}–{max(rk):.2f}) | "
              f"{med(sw_pps) / 1e3:.0f} k | {med(rk_pps) / 1e3:.0f} k | "
              f"{med([r['ksoftirqd_cpu'] for r in rs]):.2f} | {med(frames) * 100:.0f} % |")


def main():
    global PREFIX
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", default="target/release/switchml")
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--paths", default=",".join(PATHS), help="of " + ", ".join(PATHS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--elements", type=int, default=16 << 20, help="int32 elements (64 MiB)")
    p.add_argument("--iterations", type=int, default=1, help="all-reduces of the tensor a job")
    p.add_argument("--limit", type=int, default=300, help="seconds a job may take")
    p.add_argument("--out", help="write every job's measurements as JSON lines")
    p.add_argument("--dialect", default="switchml", choices=["switchml", "p4app"],
                   help="whose switch: ours (paths " + ", ".join(PATHS) + ") or the "
                   "original SwitchML's dialect (paths " + ", ".join(P4APP_PATHS) + ")")
    p.add_argument("--prefix", default=PREFIX, help="of the namespaces and interfaces")
    a = p.parse_args()
    PREFIX = a.prefix
    job = run_job
    if a.dialect == "p4app":
        job = run_p4app_job
        if a.paths == ",".join(PATHS):
            a.paths = ",".join(P4APP_PATHS)
    if os.geteuid() != 0:
        sys.exit("xdpbench: must run as root (namespaces, bpf)")
    ranks = [int(x) for x in a.ranks.split(",")]
    key = secrets.token_hex(8)
    bed = Testbed(max(ranks))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    results = []
    try:
        for rnd in range(a.rounds):
            for n in ranks:
                # Rotate which path goes first, round by round.
                paths = a.paths.split(",")
                paths = paths[rnd % len(paths):] + paths[:rnd % len(paths)]
                for path in paths:
                    r = job(a.binary, path, n, a.elements, a.iterations, key, a.limit)
                    r["round"] = rnd
                    print(json.dumps(r), file=sys.stderr, flush=True)
                    results.append(r)
    finally:
        bed.close()
    if a.out:
        with open(a.out, "w") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")
    table(results, a.elements, a.iterations)


if __name__ == "__main__":
    main()
