"""The measurement driver of bench/run-trainbench (run that, not this, unless you know why).

On the testbed of bench/testbed (already up), it trains the same model with DDP on P
worker namespaces, once with Gloo's all-reduce and once through ``switchml``'s DDP hook
and a ``switchml switch`` daemon in nb-sw, and appends one JSON line per training run to
--out. Runs alternate the systems' order (run k starts with system k mod 2). The
processes, the CPU cgroup and the sampler of host CPU and link bytes are bench/netbench.py's.
"""

import argparse
import json
import os
import signal
import sys
import tempfile
import time

import netbench
from netbench import SWITCH_IP, SWITCH_PORT, log, worker_ip, worker_ns

BENCH = os.path.dirname(os.path.abspath(__file__))
SYSTEMS = ["switchml", "gloo"]


class TrainBench:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="trainbench-")
        self.seq = 0
        self.port = 29600
        self.group = netbench.CpuGroup()
        self.sampler = None

    def proc(self, argv, name, env=None):
        self.seq += 1
        return netbench.Proc(self.group.wrap(argv), f"{self.seq:05d}-{name}", self.tmp, env=env)

    def ranks(self, system, p, extra):
        a = self.a
        self.port += 1
        env = dict(os.environ, GLOO_SOCKET_IFNAME="eth0", OMP_NUM_THREADS="1")
        return [
            self.proc(["ip", "netns", "exec", worker_ns(r), a.python,
                       os.path.join(BENCH, "train_rank.py"), "--system", system,
                       "--rank", str(r), "--world", str(p),
                       "--master", f"{worker_ip(0)}:{self.port}",
                       "--hidden", str(a.hidden), "--steps", str(a.steps),
                       "--eval-every", str(a.eval_every), "--seed", str(a.seed)] + extra,
                      f"{system}{r}-p{p}", env=env)
            for r in range(p)
        ]

    def run_one(self, system, p):
        """Train once; return the row (or one with "error")."""
        a = self.a
        row = {"system": system, "world": p}
        switch, extra = None, []
        if system == "switchml":
            key = os.urandom(8).hex()
            switch = self.proc(["ip", "netns", "exec", "nb-sw", a.switchml, "switch", "--bind",
                                f"{SWITCH_IP}:{SWITCH_PORT}", "--job",
                                f"0:{p}:{a.lanes * a.window}:{key}", "--json"], f"switch-p{p}")
            if not netbench.wait_for_line(switch, "listening", 10):
                switch.kill()
                netbench.wait_all([switch], 5)
                return {**row, "error": f"switch did not start: {switch.stderr_tail()}"}
            extra = ["--switch", f"{SWITCH_IP}:{SWITCH_PORT}", "--key", key,
                     "--window", str(a.window), "--count", str(a.count),
                     "--lanes", str(a.lanes), "--rto-ms", str(a.rto_ms),
                     "--coalesce-us", str(a.coalesce_us)]
        ranks = self.ranks(system, p, extra)
        finished = netbench.wait_all(ranks, a.run_limit)
        counters = {}
        if switch is not None:
            switch.kill(signal.SIGINT)
            if not netbench.wait_all([switch], 10):
                log("the switch did not stop on SIGINT; killed")
            counters = next((x["counters"] for x in switch.json_lines() if "counters" in x), {})
        reports = [r.json_lines() for r in ranks]
        if not finished or not all(reports):
            why = "timed out" if not finished else "; ".join(
                f"rank {i}: exit {r.code}: {r.stderr_tail()}" for i, r in enumerate(ranks)
                if not reports[i])
            return {**row, "error": why}
        rs = [x[-1] for x in reports]
        r0 = rs[0]
        row.update({
            "hidden": r0["hidden"],
            "parameters": r0["parameters"],
            "gradient_bytes": r0["gradient_bytes"],
            # A step ends when the slowest rank's ends; a rank's clock is its own steps.
            "step_seconds": [max(s) for s in zip(*(x["step_seconds"] for x in rs))],
            "rank_step_seconds": [x["step_seconds"] for x in rs],
            "losses": [sum(v) / len(v) for v in zip(*(x["losses"] for x in rs))],
            "evals": r0["evals"],
            "evals_agree": all(x["evals"] == r0["evals"] for x in rs),
            "final_accuracy": r0["final_accuracy"],
            "cpu_seconds": sum(x["cpu_seconds"] for x in rs),
            "switch_cpu_seconds": switch.cpu if switch is not None else None,
            "stats": [x.get("stats") for x in rs] if system == "switchml" else None,
            "switch_counters": {k: counters.get(k) for k in
                                ("received", "sent", "send_failures", "total_drops")}
            if switch is not None else None,
            "start": min(x["start"] for x in rs),
            "end": max(x["end"] for x in rs),
        })
        return row

    def main(self):
        a = self.a
        self.sampler = netbench.Sampler(max(a.workers), self.group)
        self.sampler.start()
        deadline = time.time() + a.limit
        try:
            with open(a.out, "a") as out:
                out.write(json.dumps({"phase": "meta", **meta(a)}) + "\n")
                for run in range(a.runs):
                    for p in a.workers:
                        order = SYSTEMS[run % 2:] + SYSTEMS[:run % 2]
                        for pos, system in enumerate(order):
                            if time.time() > deadline:
                                log(f"--limit {a.limit:g} s reached; stopping")
                                return
                            log(f"P={p} run {run + 1}/{a.runs}: {system}")
                            row = self.run_one(system, p)
                            row.update(phase="train", rate=a.rate, run=run, position=pos)
                            if "start" in row:
                                row.update(self.sampler.window(row["start"], row["end"], p))
                            out.write(json.dumps(row) + "\n")
                            out.flush()
                            say(row)
        finally:
            for p in list(netbench.LIVE):
                p.kill()
            self.sampler.stop()
            self.group.remove()


def say(row):
    if "error" in row:
        log(f"  FAILED: {row['error'][:500]}")
        return
    steps = sorted(row["step_seconds"])
    log(f"  median step {steps[len(steps) // 2] * 1e3:.1f} ms, "
        f"final accuracy {row['final_accuracy']:.4f}, host busy {row.get('host_util', 0):.0%}")


def meta(a):
    m = netbench.meta(argparse.Namespace(count=a.count, window=a.window, lanes=a.lanes,
                                         rto_ms=a.rto_ms, retries=None,
                                         coalesce_us=a.coalesce_us))
    m["args"] = vars(a)
    m.pop("openmpi", None)
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="JSON lines file to append to")
    p.add_argument("--switchml", required=True, help="the switchml binary")
    p.add_argument("--python", required=True, help="a python that imports torch and switchml")
    p.add_argument("--rate", default="100mbit", help="the testbed's link rate (recorded)")
    p.add_argument("--workers", default="3,4", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--steps", type=int, default=60, help="training steps per run")
    p.add_argument("--hidden", type=int, default=1024, help="width of the two hidden layers")
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--target", type=float, default=0.95,
                   help="test accuracy whose time to reach the report states (recorded)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=256, help="switchml values per packet")
    p.add_argument("--window", type=int, default=128, help="switchml slots per lane")
    p.add_argument("--lanes", type=int, default=1)
    p.add_argument("--rto-ms", type=int, default=30)
    p.add_argument("--coalesce-us", type=int, default=500)
    p.add_argument("--run-limit", type=float, default=300, help="seconds for one training run")
    p.add_argument("--limit", type=float, default=3600, help="seconds for the whole driver")
    a = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    TrainBench(a).main()


if __name__ == "__main__":
    sys.exit(main())
