#!/usr/bin/env python3
"""Regenerate every simulator figure: run the experiments, keep their JSON, plot them.

    python3 sim/figures.py           # the full set (a few minutes on one core)
    python3 sim/figures.py --quick   # small tensors, fewer points: a smoke run, written
                                     # under target/sim-quick/ (the committed ones stay)

Builds `switchml-sim` (release), runs each experiment point through it with --json, writes
sim/results/<experiment>.json and docs/figures/<experiment>.png. Needs matplotlib
(Debian: apt-get install python3-matplotlib). docs/simulation.md explains each figure
beside the paper's claim.
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "sim", "results")
FIGURES = os.path.join(ROOT, "docs", "figures")
BINARY = os.path.join(ROOT, "target", "release", "switchml-sim")


def run(**flags):
    """Run the simulator once; return its JSON (analytic bounds and one report per run)."""
    args = [BINARY, "--json"]
    for k, v in flags.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    out = subprocess.run(args, check=False, capture_output=True, text=True)
    if not out.stdout:
        sys.exit(f"{' '.join(args)} failed: {out.stderr}")
    result = json.loads(out.stdout)
    for r in result["runs"]:
        print(
            f"  {' '.join(args[2:]):70} {r['algorithm']:8} "
            f"{(r['completion_ns'] or 0) / 1e6:10.3f} ms  "
            f"{(r['elements_per_sec'] or 0) / 1e9:6.3f} G/s  ({r['wall_secs']:.2f} s)",
            flush=True,
        )
    return result


# Retransmission policies (first timeout, ceiling of its doubling), microseconds: the core's
# doubling as configured here; the original's (a fixed timeout: it doubles only after 100
# timeouts); a fixed timeout ten times shorter.
POLICIES = [(1000, 64000), (1000, 1000), (100, 100)]


def policy_label(rto, max_rto):
    doubling = f", doubling to {max_rto / 1000:g} ms" if max_rto > rto else ", fixed"
    return f"timeout {rto / 1000:g} ms{doubling}"


def experiments(quick, only=None):
    mib = 8 if quick else 100
    small = 4 if quick else 25
    seeds = [1] if quick else [1, 2, 3]
    out = {}

    def want(name):
        return only in (None, name)

    if want("workers"):
        print("workers: aggregated elements/s against P")
        out["workers"] = [
            run(workers=p, mib=mib, algorithm="both") for p in ([2, 4, 8, 16] if quick else [2, 4, 8, 16, 32])
        ]
    if want("pool"):
        print("pool: elements/s against the pool size")
        windows = [1, 4, 16, 64, 256] if quick else [1, 2, 4, 8, 16, 32, 64, 128, 256]
        out["pool"] = [
            run(workers=8, mib=small, bucket_mib=small, window=w, prop_ns=prop)
            for prop in [1000, 5000]
            for w in windows
        ]
    if want("loss"):
        print("loss: time inflation under loss, three timeout policies")
        rates = [0, 0.0001, 0.001, 0.01]
        out["loss"] = [
            run(workers=16, mib=mib, loss=loss, rto_us=rto, max_rto_us=max_rto, seed=seed)
            for rto, max_rto in POLICIES
            for loss in rates
            for seed in (seeds if loss > 0 else [1])
        ]
    if want("stragglers"):
        print("stragglers: one late or slow rank")
        out["stragglers"] = [
            run(workers=16, mib=small, bucket_mib=small, algorithm="both", straggler_delay_us=d)
            for d in [0, 500, 1000, 2000, 4000]
        ] + [
            run(workers=16, mib=small, bucket_mib=small, algorithm="both", straggler_gbps=g)
            for g in [100, 50, 25, 10]
        ]
    if want("resends"):
        print("resends: resends per lost packet, loss on the uplinks or the downlinks only")
        out["resends"] = [
            run(workers=p, mib=small, loss=0.001, loss_on=side, max_rto_us=1000)
            for side in ["up", "down"]
            for p in ([4, 16] if quick else [2, 4, 8, 16, 32])
        ]
    return out


def load_before(name):
    """The timeout-only recovery's results (the core before protocol.md §6.1), if kept."""
    path = os.path.join(ROOT, "sim", "results", "timeout-only", name + ".json")
    return json.load(open(path)) if os.path.exists(path) else []


def plot(data):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(FIGURES, exist_ok=True)

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(FIGURES, name + ".png"), dpi=120)
        plt.close(fig)

    def mib(point):
        return f"{point['runs'][0]['scenario']['elements'] * 4 / 2**20:g}"

    def by(runs, algorithm):
        return [r for r in runs if r["algorithm"] == algorithm]

    # Elements/s against the number of workers.
    points = data["workers"]
    ps = [d["runs"][0]["scenario"]["workers"] for d in points]
    sml = [by(d["runs"], "switchml")[0]["elements_per_sec"] / 1e9 for d in points]
    ring = [by(d["runs"], "ring")[0]["elements_per_sec"] / 1e9 for d in points]
    line = [d["analytic"]["line_rate_elements_per_sec"] / 1e9 for d in points]
    ring_bound = [d["analytic"]["ring_elements_per_sec"] / 1e9 for d in points]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(ps, sml, "o-", label="in-network (simulated)")
    ax.plot(ps, ring, "s-", label="ring all-reduce (simulated)")
    ax.plot(ps, line, "k--", lw=0.8, label="line rate, k = 256 (analytic)")
    ax.plot(ps, ring_bound, "k:", lw=0.8, label="line rate · P / 2(P−1) (analytic)")
    ax.plot([4, 8, 16], [2.8, 2.8, 2.8], "^", color="C2", label="paper: SwitchML (RDMA)")
    ax.plot([4, 16], [1.38, 0.97], "v", color="C3", label="paper: NCCL ring (RDMA)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ps, [str(p) for p in ps])
    ax.set_ylim(0, 3.3)
    ax.set_xlabel("workers P")
    ax.set_ylabel("aggregated elements/s (G)")
    ax.set_title(f"All-reduce of {mib(points[0])} MiB per worker, 100 Gb/s links")
    ax.legend(fontsize=7, loc="lower left")
    save(fig, "workers")

    # Completion time against the pool size.
    fig, ax = plt.subplots(figsize=(6, 4))
    props = sorted({d["runs"][0]["scenario"]["propagation_ns"] for d in data["pool"]})
    for i, prop in enumerate(props):
        pts = [d for d in data["pool"] if d["runs"][0]["scenario"]["propagation_ns"] == prop]
        ws = [d["runs"][0]["scenario"]["window"] for d in pts]
        elements = pts[0]["runs"][0]["scenario"]["elements"]
        ax.plot(ws, [d["runs"][0]["completion_ns"] / 1e6 for d in pts], "o", color=f"C{i}",
                label=f"simulated, {prop / 1000:g} µs links")
        rtt = pts[0]["analytic"]["slot_round_trip_ns"] / 1000
        ax.plot(ws, [elements / d["analytic"]["window_elements_per_sec"] * 1e3 for d in pts], "-",
                color=f"C{i}", lw=0.8, label=f"elements / min(line rate, s·k / RTT), RTT {rtt:.1f} µs")
        ax.axvline(pts[0]["analytic"]["bdp_slots"], color=f"C{i}", ls=":", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("pool size s (slots per worker); dotted: bandwidth-delay product")
    ax.set_ylabel("completion time (ms)")
    ax.set_title("8 workers, 100 Gb/s: time falls until the pool covers the BDP")
    ax.legend(fontsize=7)
    save(fig, "pool")

    # Loss: inflation, resends and probes per drop; dashed: the timeout-only recovery before
    # protocol.md §6.1 (sim/results/timeout-only/, the core at commit 7e0a93f).
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(13, 3.8))
    mean = lambda xs: sum(xs) / len(xs)
    before = load_before("loss")
    for i, (rto, max_rto) in enumerate(POLICIES):
        for points, style, tag in ((data["loss"], "o-", ""), (before, "x--", " (before: timeout only)")):
            pts = [
                d["runs"][0]
                for d in points
                if (d["runs"][0]["scenario"]["rto_us"], d["runs"][0]["scenario"]["max_rto_us"]) == (rto, max_rto)
            ]
            if not pts:
                continue
            base = [r["completion_ns"] for r in pts if r["scenario"]["loss"] == 0][0]
            rates = sorted({r["scenario"]["loss"] for r in pts if r["scenario"]["loss"] > 0})
            at = lambda x: [r for r in pts if r["scenario"]["loss"] == x]
            infl = [mean([r["completion_ns"] / base for r in at(x)]) for x in rates]
            rpd = [mean([r["protocol"]["resends_per_drop"] for r in at(x)]) for x in rates]
            label = policy_label(rto, max_rto) + tag
            xs = [x * 100 for x in rates]
            a1.plot(xs, infl, style, color=f"C{i}", label=label)
            a2.plot(xs, rpd, style, color=f"C{i}", label=label)
            if not tag:
                ppd = [mean([r["protocol"]["probes"] / r["lost"] for r in at(x)]) for x in rates]
                a3.plot(xs, ppd, style, color=f"C{i}", label=label)
                for r in pts:
                    if r["scenario"]["loss"] > 0:
                        a1.plot(r["scenario"]["loss"] * 100, r["completion_ns"] / base, ".", color=f"C{i}", alpha=0.4)
    for a in (a1, a2, a3):
        a.set_xscale("log")
        a.set_xlabel("loss on every link (%)")
        a.legend(fontsize=7)
    a1.set_yscale("log")
    a1.set_ylabel("completion time / lossless (mean; dots: seeds)")
    a1.set_title(f"16 workers, {mib(data['loss'][0])} MiB, 100 Gb/s")
    a2.set_ylabel("worker resends per packet lost")
    a2.set_ylim(0, 17)
    a2.set_title("asking first: at most one resend per loss")
    a3.set_ylabel("Probes (20 B) per packet lost")
    a3.set_title("what asking costs")
    for a in (a1, a2):
        a.legend(fontsize=6)
    save(fig, "loss")

    # Stragglers.
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.8))
    late = [d for d in data["stragglers"] if d["runs"][0]["scenario"]["straggler_gbps"] is None]
    slow = [d for d in data["stragglers"] if d["runs"][0]["scenario"]["straggler_gbps"] is not None]
    for i, alg in enumerate(["switchml", "ring"]):
        name = "in-network" if alg == "switchml" else "ring"
        xs = [d["runs"][0]["scenario"]["straggler_delay_ns"] / 1e6 for d in late]
        a1.plot(xs, [by(d["runs"], alg)[0]["completion_ns"] / 1e6 for d in late], "o-", color=f"C{i}", label=name)
        xs = [d["runs"][0]["scenario"]["straggler_gbps"] for d in slow]
        a2.plot(xs, [by(d["runs"], alg)[0]["completion_ns"] / 1e6 for d in slow], "o-", color=f"C{i}", label=name)
    base = by(late[0]["runs"], "switchml")[0]["completion_ns"] / 1e6
    xs = [d["runs"][0]["scenario"]["straggler_delay_ns"] / 1e6 for d in late]
    a1.plot(xs, [base + x for x in xs], "k:", lw=0.8, label="in-network on time + delay")
    a1.set_xlabel("rank 0 starts late by (ms)")
    a2.set_xlabel("rank 0's link rate (Gb/s); the others 100")
    a2.set_xscale("log")
    a2.invert_xaxis()
    for a in (a1, a2):
        a.set_ylabel("completion time (ms)")
        a.legend(fontsize=8)
    a1.set_title(f"16 workers, {mib(late[0])} MiB: a late rank")
    a2.set_title(f"16 workers, {mib(late[0])} MiB: a slow rank")
    save(fig, "stragglers")

    # Resends per lost packet, by the direction of the loss; dashed: timeout-only, before.
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, side in enumerate(["uplinks", "downlinks"]):
        what = "a Contribution lost (uplinks)" if side == "uplinks" else "a Result lost (downlinks)"
        for points, style, tag in ((data["resends"], "o-", ""), (load_before("resends"), "x--", ", before")):
            pts = [d["runs"][0] for d in points if d["runs"][0]["scenario"]["loss_on"] == side]
            if pts:
                ps = [r["scenario"]["workers"] for r in pts]
                # A fetch (a Probe that brings a lost Result back, protocol.md §6.1) stands
                # for the resend the rank would otherwise make.
                per = [(r["protocol"]["retransmissions"] + r["protocol"].get("fetches", 0)) / r["lost"] for r in pts]
                ax.plot(ps, per, style, color=f"C{i}", label=what + tag)
    ax.plot(ps, ps, "k:", lw=0.8, label="P: every rank resends")
    ax.plot(ps, [1] * len(ps), "k--", lw=0.8, label="1: only the rank that lost it")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(ps, [str(p) for p in ps])
    ax.set_xlabel("workers P")
    ax.set_ylabel("resends + fetches per packet lost")
    ax.set_title(f"0.1% loss on one direction, fixed 1 ms timeout, {mib(data['resends'][0])} MiB")
    ax.legend(fontsize=8)
    save(fig, "resends")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small tensors, fewer points")
    parser.add_argument("--plot-only", action="store_true", help="plot sim/results as they are")
    parser.add_argument("--only", help="rerun only this experiment, keep the others' results")
    args = parser.parse_args()
    global RESULTS, FIGURES
    if args.quick:
        RESULTS = os.path.join(ROOT, "target", "sim-quick", "results")
        FIGURES = os.path.join(ROOT, "target", "sim-quick", "figures")
    names = ["workers", "pool", "loss", "stragglers", "resends"]
    if args.plot_only or args.only:
        data = {n: json.load(open(os.path.join(RESULTS, n + ".json"))) for n in names if n != args.only}
    if not args.plot_only:
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "switchml-sim"], cwd=ROOT, check=True)
        fresh = experiments(args.quick, args.only)
        os.makedirs(RESULTS, exist_ok=True)
        for n, points in fresh.items():
            with open(os.path.join(RESULTS, n + ".json"), "w") as f:
                json.dump(points, f, indent=1)
        data = {**data, **fresh} if args.only else fresh
    plot(data)
    print(f"figures in {FIGURES}, results in {RESULTS}")


if __name__ == "__main__":
    main()
