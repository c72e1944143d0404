"""Turn bench/netbench.py's JSON lines into the tables of docs/benchmarks.md and its plot.

    /usr/bin/python3 bench/report.py RESULTS.jsonl [--doc docs/benchmarks.md] [--plot out.png]

Without --doc the tables go to stdout. With --doc, the text between the markers
`<!-- netbench:begin -->` and `<!-- netbench:end -->` is replaced and the rest is kept.

Bounds, with S the tensor, B the link rate and frames counted as tbf counts them (the
Ethernet header, 14 bytes, plus the IP packet; no preamble, inter-frame gap or FCS):
- in-network (switchml-rs): every link carries S up and S down, so T = S/B / e_sml with
  e_sml = 4k / (4k + 20 header + 8 UDP + 20 IP + 14 Ethernet);
- ring (Gloo, Open MPI): every link carries 2(P-1)/P * S each way, so
  T = 2(P-1)/P * S/B / e_tcp with e_tcp = (MTU - 20 IP - 32 TCP with timestamps) / (MTU + 14);
  the ACKs of the opposite flow share the link too and are not in e_tcp (the measured link
  bytes show them).
"""

import argparse
import json
import statistics
import sys
from collections import defaultdict

import share_report

BEGIN, END = "<!-- netbench:begin -->", "<!-- netbench:end -->"


def load(path):
    meta, rows = None, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            d = json.loads(line)
            if d.get("phase") == "meta":
                meta = d  # the last run's settings
            else:
                rows.append(d)
    return meta, rows


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def mib(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def f(x, fmt="{:.3f}", none="–"):
    return none if x is None else fmt.format(x)


class Report:
    def __init__(self, meta, rows):
        self.meta = meta or {}
        self.rows = rows
        tuning = self.meta.get("switchml_tuning", {})
        self.k = tuning.get("count", 256)
        self.mtu = int(self.meta.get("mtu") or 1500)
        self.cpus = int(self.meta.get("cpus") or 2)
        self.e_sml = 4 * self.k / (4 * self.k + 20 + 8 + 20 + 14)
        self.e_tcp = (self.mtu - 52) / (self.mtu + 14)
        # One row per run: the last attempt that other load did not disturb, else the last.
        attempts = defaultdict(list)
        for r in rows:
            attempts[(r["phase"], r["rate"], r["loss_pct"], r["world"], r["bytes"], r["system"],
                      r["run"])].append(r)
        self.groups = defaultdict(list)
        self.disturbed_runs = 0
        self.redone = 0
        for key, rs in attempts.items():
            clean = [r for r in rs if not r.get("disturbed")]
            pick = (clean or rs)[-1]
            self.redone += len(rs) - 1
            self.disturbed_runs += 0 if clean else 1
            self.groups[key[:-1]].append(pick)

    def bound_in(self, size, bps):
        return size * 8 / bps / self.e_sml

    def bound_ring(self, size, bps, p):
        return 2 * (p - 1) / p * size * 8 / bps / self.e_tcp

    def stat(self, phase, rate, loss, p, size, system):
        """Medians over the good runs, and counts of runs and failures."""
        rs = self.groups.get((phase, rate, loss, p, size, system), [])
        good = [r for r in rs if "error" not in r and r.get("verified")]

        def ranks(r):
            # The ranks' own CPU over their timed regions (switchml-rs's row also carries the
            # switch daemon's, which a hardware switch would not cost the hosts).
            c = r.get("cpu_seconds")
            return None if c is None else c - r.get("switch_cpu_seconds", 0.0)

        def switch(r):
            if r.get("switch_cpu_seconds") is None:
                return None
            if r.get("group_cpu_seconds") is None:
                return r["switch_cpu_seconds"]
            return max(0.0, r["group_cpu_seconds"] - ranks(r))

        return {
            "runs": len(rs),
            "good": len(good),
            "failed": len([r for r in rs if "error" in r]),
            "wrong": len([r for r in rs if "error" not in r and not r.get("verified")]),
            "seconds": med([r["seconds"] for r in good]),
            "ranks": med([ranks(r) for r in good]),
            "switch": med([switch(r) for r in good]),
            # The whole machine (both cores, the kernel's softirq work included), from
            # /proc/stat: the cgroup's time already holds the softirq work that ran in its
            # tasks' context, so adding /proc/stat's softirq to it would count that twice.
            "busy": med([r.get("host_util") for r in good]),
            "resends": med([r.get("retransmissions") for r in good]),
            "link": med([max(r["link_up_bytes"] + r["link_down_bytes"]) for r in good
                         if r.get("link_up_bytes")]),
            "rows": good,
        }

    def keys(self, phase):
        ks = {(r["rate"], r["world"]) for r in self.rows if r["phase"] == phase}
        return sorted(ks, key=lambda k: (rate_bps(k[0]), k[1]))

    def sizes(self, phase, rate, p):
        return sorted({r["bytes"] for r in self.rows
                       if r["phase"] == phase and r["rate"] == rate and r["world"] == p})

    def paired_ratio(self, a, b):
        """Median over runs of b.seconds / a.seconds, pairing runs by index."""
        by_run = {r["run"]: r["seconds"] for r in b["rows"]}
        ratios = [by_run[r["run"]] / r["seconds"] for r in a["rows"] if r["run"] in by_run]
        return med(ratios)

    # ------------------------------------------------------------ tables

    def time_tables(self):
        out = []
        for rate, p in self.keys("sizes"):
            bps = rate_bps(rate)
            out.append(f"\n#### {rate_name(rate)}, P = {p}{' (sanity row)' if p == 2 else ''}\n")
            out.append("| tensor | switchml-rs s | of its bound | Gloo s | of its bound | Open MPI s "
                       "| of its bound | × Gloo | × MPI | in-network bound s | ring bound s "
                       "| bound ratio | goodput sml / Gloo / MPI (% of line) |")
            out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
            for size in self.sizes("sizes", rate, p):
                st = {s: self.stat("sizes", rate, 0.0, p, size, s) for s in ("switchml", "gloo", "mpi")}
                bi, br = self.bound_in(size, bps), self.bound_ring(size, bps, p)

                def cell(s, bound):
                    x = st[s]
                    if x["seconds"] is None:
                        return "failed" if x["runs"] else "–", "–"
                    flag = "" if x["good"] == x["runs"] else f" ({x['runs'] - x['good']} of {x['runs']} failed)"
                    return f"{x['seconds']:.3f}{flag}", f"{100 * bound / x['seconds']:.0f}%"

                sml, smlb = cell("switchml", bi)
                glo, glob = cell("gloo", br)
                mp, mpb = cell("mpi", br)
                xg = ratio(st["gloo"]["seconds"], st["switchml"]["seconds"])
                xm = ratio(st["mpi"]["seconds"], st["switchml"]["seconds"])
                gp = " / ".join(f(None if st[s]["seconds"] is None else
                                  100 * size * 8 / bps / st[s]["seconds"], "{:.0f}")
                                for s in ("switchml", "gloo", "mpi"))
                out.append(f"| {mib(size)} | {sml} | {smlb} | {glo} | {glob} | {mp} | {mpb} "
                           f"| {f(xg, '{:.2f}×')} | {f(xm, '{:.2f}×')} | {bi:.3f} | {br:.3f} "
                           f"| {br / bi:.2f}× | {gp} |")
        return "\n".join(out)

    def cpu_table(self):
        out = ["| link | P | tensor | CPU-s/GB of the ranks sml / Gloo / MPI "
               "| CPU-s/GB of sml's software switch | machine busy (2 cores) sml / Gloo / MPI "
               "| sml resends | busiest link direction sml / Gloo / MPI (% of line rate) |",
               "|---|---:|---:|---|---:|---|---:|---|"]
        keys = [("sizes", r, p) for r, p in self.keys("sizes")] + [("cpu", r, p) for r, p in self.keys("cpu")]
        for phase, rate, p in keys:
            bps = rate_bps(rate)
            for size in self.sizes(phase, rate, p):
                if size < 16 << 20:
                    continue
                st = {s: self.stat(phase, rate, 0.0, p, size, s) for s in ("switchml", "gloo", "mpi")}
                gb = size / 1e9

                def per_gb(x):
                    return f(None if x is None else x / gb, "{:.1f}")

                ranks = " / ".join(per_gb(st[s]["ranks"]) for s in ("switchml", "gloo", "mpi"))
                busy = " / ".join(f(None if st[s]["busy"] is None else 100 * st[s]["busy"], "{:.0f}%")
                                  for s in ("switchml", "gloo", "mpi"))
                link = " / ".join(
                    f(None if st[s]["link"] is None or st[s]["seconds"] is None else
                      100 * st[s]["link"] * 8 / bps / st[s]["seconds"], "{:.0f}%")
                    for s in ("switchml", "gloo", "mpi"))
                out.append(f"| {rate_name(rate)} | {p} | {mib(size)} | {ranks} "
                           f"| {per_gb(st['switchml']['switch'])} | {busy} "
                           f"| {f(st['switchml']['resends'], '{:.0f}')} | {link} |")
        return "\n".join(out)

    def faster_link_table(self):
        keys = self.keys("cpu")
        if not keys:
            return "(not measured in these results)"
        out = ["| link | P | tensor | switchml-rs s (of its bound) | Gloo s (of its bound) "
               "| Open MPI s (of its bound) | × Gloo | × MPI | machine busy (2 cores) sml / Gloo / MPI |",
               "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for rate, p in keys:
            bps = rate_bps(rate)
            for size in self.sizes("cpu", rate, p):
                st = {s: self.stat("cpu", rate, 0.0, p, size, s) for s in ("switchml", "gloo", "mpi")}
                bi, br = self.bound_in(size, bps), self.bound_ring(size, bps, p)

                def cell(s, bound):
                    x = st[s]["seconds"]
                    return "–" if x is None else f"{x:.3f} ({100 * bound / x:.0f}%)"

                busy = " / ".join(f(None if st[s]["busy"] is None else 100 * st[s]["busy"], "{:.0f}%")
                                  for s in ("switchml", "gloo", "mpi"))
                out.append(f"| {rate_name(rate)} | {p} | {mib(size)} | {cell('switchml', bi)} "
                           f"| {cell('gloo', br)} | {cell('mpi', br)} "
                           f"| {f(ratio(st['gloo']['seconds'], st['switchml']['seconds']), '{:.2f}×')} "
                           f"| {f(ratio(st['mpi']['seconds'], st['switchml']['seconds']), '{:.2f}×')} | {busy} |")
        return "\n".join(out)

    def loss_table(self):
        lrows = [r for r in self.rows if r["phase"] == "loss"]
        if not lrows:
            return "(no loss sweep in these results)"
        rate, p, size = lrows[0]["rate"], lrows[0]["world"], lrows[0]["bytes"]
        losses = sorted({r["loss_pct"] for r in lrows})
        base = {s: self.stat("loss", rate, losses[0], p, size, s)["seconds"] for s in ("switchml", "gloo", "mpi")}
        out = [f"{rate_name(rate)}, P = {p}, {mib(size)}; loss per link direction, both directions "
               f"of every link.\n",
               "| loss | switchml-rs s (inflation) | resends | Gloo s (inflation) | Open MPI s (inflation) "
               "| × Gloo | × MPI | × Gloo, paired by run | packets dropped on purpose per run (up + down) "
               "| resends per lost datagram | probes per lost datagram |",
               "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for loss in losses:
            st = {s: self.stat("loss", rate, loss, p, size, s) for s in ("switchml", "gloo", "mpi")}

            def cell(s):
                x = st[s]
                if x["seconds"] is None:
                    return "failed" if x["runs"] else "–"
                infl = f" ({x['seconds'] / base[s]:.2f}×)" if base[s] else ""
                flag = "" if x["good"] == x["runs"] else f" [{x['runs'] - x['good']} of {x['runs']} failed]"
                return f"{x['seconds']:.3f}{infl}{flag}"

            drops = med([sum(r.get("injected_drops_run", [0, 0])) for r in st["switchml"]["rows"]])

            def per_drop(key):
                # Per datagram lost, counted at both ends where the run says (the nft
                # counters count a GSO send's datagrams as one packet), else per nft drop.
                xs = []
                for r in st["switchml"]["rows"]:
                    lost = sum(r.get("lost_datagrams") or r.get("injected_drops_run") or [0])
                    if lost > 0:
                        xs.append(r.get(key, 0) / lost)
                return med(xs) if xs else None
            out.append(f"| {loss:g}% | {cell('switchml')} | {f(st['switchml']['resends'], '{:.0f}')} "
                       f"| {cell('gloo')} | {cell('mpi')} "
                       f"| {f(ratio(st['gloo']['seconds'], st['switchml']['seconds']), '{:.2f}×')} "
                       f"| {f(ratio(st['mpi']['seconds'], st['switchml']['seconds']), '{:.2f}×')} "
                       f"| {f(self.paired_ratio(st['switchml'], st['gloo']), '{:.2f}×')} "
                       f"| {f(drops, '{:.0f}')} (switchml run) "
                       f"| {f(per_drop('retransmissions'), '{:.2f}')} | {f(per_drop('probes'), '{:.2f}')} |")
        return "\n".join(out)

    def targets(self):
        """The issue's acceptance targets, checked against these medians."""
        out = ["| target | measured | met |", "|---|---:|:---:|"]
        rate = next((r for r, _ in self.keys("sizes") if rate_bps(r) == 100_000_000), None)
        size = 64 << 20
        if rate:
            for p, want in ((4, 1.45), (3, 1.3)):
                sml = self.stat("sizes", rate, 0.0, p, size, "switchml")
                glo = self.stat("sizes", rate, 0.0, p, size, "gloo")
                if sml["seconds"] is None or glo["seconds"] is None:
                    continue
                share = self.bound_in(size, rate_bps(rate)) / sml["seconds"]
                x = glo["seconds"] / sml["seconds"]
                out.append(f"| P = {p}: switchml-rs ≥ 95% of its in-network bound | {100 * share:.1f}% "
                           f"| {'yes' if share >= 0.95 else 'NO'} |")
                out.append(f"| P = {p}: ≥ {want}× faster than Gloo (100 Mbit/s, 64 MiB) | {x:.2f}× "
                           f"| {'yes' if x >= want else 'NO'} |")
                gb = self.bound_ring(size, rate_bps(rate), p)
                out.append(f"| P = {p}: Gloo within 1.01–1.02× of its ring bound (reference) "
                           f"| {glo['seconds'] / gb:.3f}× | – |")
        lrows = [r for r in self.rows if r["phase"] == "loss" and r["loss_pct"] == 1.0]
        if lrows:
            r0 = lrows[0]
            sml = self.stat("loss", r0["rate"], 1.0, r0["world"], r0["bytes"], "switchml")
            glo = self.stat("loss", r0["rate"], 1.0, r0["world"], r0["bytes"], "gloo")
            if sml["seconds"] and glo["seconds"]:
                x = glo["seconds"] / sml["seconds"]
                out.append(f"| 1% loss per link direction: ≥ 1.35× faster than Gloo in the same run "
                           f"| {x:.2f}× (paired {f(self.paired_ratio(sml, glo), '{:.2f}×')}) "
                           f"| {'yes' if x >= 1.35 else 'NO'} |")
        wrong = [r for r in self.rows if "error" not in r and not r.get("verified")]
        failed = [r for r in self.rows if "error" in r]
        out.append(f"| every result checked against the expected sum | {len(self.rows)} measurements, "
                   f"{len(wrong)} wrong, {len(failed)} failed | {'yes' if not wrong else 'NO'} |")
        return "\n".join(out)

    def settings(self):
        m = self.meta
        t = m.get("switchml_tuning", {})
        a = m.get("args", {})
        return "\n".join([
            f"- Machine: {m.get('cpus')} × {m.get('cpu_model', '?').strip()}, Linux {m.get('kernel')}; "
            f"{m.get('date')}; commit `{m.get('git')}`.",
            f"- Testbed (bench/testbed): a star of network namespaces, 4 worker links into one switch "
            f"namespace; every link direction shaped by tbf (latency {m.get('latency')}, burst "
            f"{self.per_rate('burst_bytes', ' B')}), MTU {self.mtu}, TSO/GSO/GRO and UDP segmentation off; random loss by "
            f"{m.get('loss_method')} at the receiving end of each link direction.",
            f"- TCP congestion control in the namespaces: {m.get('tcp_congestion_control')}; "
            f"torch {m.get('torch')} (gloo); {m.get('openmpi')}.",
            f"- switchml-rs: k = {t.get('count')} values per packet, {t.get('lanes')} lane × "
            f"{self.per_rate('window')} slots per worker, retransmission timeout floor {t.get('rto_ms')} ms "
            f"(`--rto-ms`; the worker's measured timeout stays below it here), "
            f"{t.get('coalesce_us', 0)} µs receive coalescing (`--coalesce-us`), "
            f"{t.get('retries')} timeouts of one use before giving up.",
            f"- Runs per point: {a.get('runs')}, systems alternated (run k starts with system k mod 3); "
            f"medians over the runs whose result was verified. A run during which other tasks on "
            f"the machine used more than 10% of a core is measured again (up to {a.get('redo')} times); "
            f"{self.redone} measurements were redone, {self.disturbed_runs} runs stayed disturbed "
            f"after that and are included.",
            f"- Tensor sizes: {self.size_list()}; sizes whose ring bound at the largest P exceeds "
            f"{a.get('max_bound')} s are left out at that rate, to bound the run time.",
            f"- Wire efficiency: switchml-rs e = {self.e_sml:.4f} ({4 * self.k} B payload in a "
            f"{4 * self.k + 62} B frame), TCP e = {self.e_tcp:.4f} ({self.mtu - 52} B in {self.mtu + 14} B).",
        ])

    def size_list(self):
        out = []
        for rate, _ in self.keys("sizes"):
            sizes = [mib(x) for x in sorted({r["bytes"] for r in self.rows
                                             if r["phase"] == "sizes" and r["rate"] == rate})]
            out.append(f"{sizes[0]} to {sizes[-1]} at {rate_name(rate)}")
        return "; ".join(dict.fromkeys(out))

    def per_rate(self, field, unit=""):
        """`field` of the rows, by link rate ("64 at 50 Mbit/s, 128 at 100 Mbit/s")."""
        v = {r["rate"]: r[field] for r in self.rows if r.get(field)}
        return ", ".join(f"{x}{unit} at {rate_name(k)}"
                         for k, x in sorted(v.items(), key=lambda kv: rate_bps(kv[0]))) or "?"

    def markdown(self):
        return "\n".join([
            BEGIN,
            "### Settings of this run\n",
            self.settings(),
            "\n### Targets\n",
            self.targets(),
            "\n### All-reduce time by tensor size\n",
            "Medians in seconds. *of its bound*: the system's bound divided by its time "
            "(100% = at the bound). × Gloo, × MPI: their time over switchml-rs's.",
            self.time_tables(),
            "\n### CPU\n",
            "CPU-s/GB of the ranks: the CPU seconds every rank process spent in its timed "
            "region (user + system, kernel work run in its context included), summed over the "
            "ranks, per GB of one worker's tensor. switchml-rs's software switch is shown apart: "
            "on this testbed it shares the two cores with the workers, where a programmable "
            "switch would cost the hosts nothing. Machine busy: the share of both cores that was "
            "not idle over the timed region (/proc/stat: every process and the kernel's softirq "
            "work, where tbf, veth, the bridge and the receive path run); below 100%, the CPUs "
            "were not what set the time. Busiest link direction: bytes the veth counted over the "
            "timed region, as a share of what the line rate allows in that time (ACKs and "
            "resends included).\n",
            self.cpu_table(),
            "\n### A faster link, where the CPUs bind\n",
            self.faster_link_table(),
            "\n### Loss sweep\n",
            self.loss_table(),
            END,
        ])

    # ------------------------------------------------------------ plot

    def plot(self, path):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        colors = {"switchml": "tab:green", "gloo": "tab:blue", "mpi": "tab:orange"}
        names = {"switchml": "switchml-rs", "gloo": "Gloo", "mpi": "Open MPI"}
        keys = self.keys("sizes")
        rates = sorted({r for r, _ in keys}, key=rate_bps)
        # squeeze=False: with one panel (no size sweep) subplots returns a bare Axes.
        fig, axes = plt.subplots(1, len(rates) + 1, figsize=(5.2 * (len(rates) + 1), 4.4),
                                 squeeze=False)
        axes = axes[0]
        for ax, rate in zip(axes, rates):
            bps = rate_bps(rate)
            ps = sorted((pp for r, pp in keys if r == rate), reverse=True)
            styles = {ps[0]: "o-"}
            if len(ps) > 1:
                styles[ps[1]] = "s--"
            for p, style in styles.items():
                sizes = self.sizes("sizes", rate, p)
                for s in ("switchml", "gloo", "mpi"):
                    ys = [self.stat("sizes", rate, 0.0, p, size, s)["seconds"] for size in sizes]
                    pts = [(size >> 20, 100 * size * 8 / bps / y) for size, y in zip(sizes, ys) if y]
                    if pts:
                        ax.plot(*zip(*pts), style, color=colors[s], label=f"{names[s]}, P = {p}",
                                alpha=1.0 if p == ps[0] else 0.6, ms=4)
                ax.set_xscale("log", base=2)
                ax.set_xticks([x >> 20 for x in sizes], [str(x >> 20) for x in sizes])
                ax.axhline(100 * self.e_tcp * p / (2 * (p - 1)), color=colors["gloo"],
                           ls=":" if p == ps[0] else "-.", lw=1, label=f"ring bound, P = {p}")
            ax.axhline(100 * self.e_sml, color=colors["switchml"], ls=":", lw=1,
                       label="in-network bound")
            ax.set_xlabel("tensor (MiB)")
            ax.set_ylabel("goodput, % of line rate (S / time / B)")
            ax.set_ylim(0, 100)
            ax.set_title(f"{rate_name(rate)} links")
            ax.legend(fontsize=7, loc="lower right", ncol=2)
            ax.grid(alpha=0.3)
        ax = axes[-1]
        lrows = [r for r in self.rows if r["phase"] == "loss"]
        if lrows:
            rate, p, size = lrows[0]["rate"], lrows[0]["world"], lrows[0]["bytes"]
            losses = sorted({r["loss_pct"] for r in lrows})
            xs = list(range(len(losses)))
            for s in ("switchml", "gloo", "mpi"):
                ys = [self.stat("loss", rate, loss, p, size, s)["seconds"] for loss in losses]
                pts = [(x, y) for x, y in zip(xs, ys) if y]
                if pts:
                    ax.plot(*zip(*pts), "o-", color=colors[s], label=names[s])
            ax.axhline(self.bound_in(size, rate_bps(rate)), color=colors["switchml"], ls=":", lw=1,
                       label="in-network bound")
            ax.axhline(self.bound_ring(size, rate_bps(rate), p), color=colors["gloo"], ls=":", lw=1,
                       label="ring bound")
            ax.set_xticks(xs, [f"{x:g}%" for x in losses])
            ax.set_xlabel("random loss per link direction")
            ax.set_ylabel("all-reduce time (s)")
            ax.set_ylim(bottom=0)
            ax.set_title(f"loss sweep: {rate_name(rate)}, P = {p}, {mib(size)}")
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
        else:
            ax.set_axis_off()
        fig.tight_layout()
        fig.savefig(path, dpi=110)


def ratio(a, b):
    return None if a is None or b is None else a / b


def rate_bps(rate):
    r = rate.lower()
    for suffix, mult in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3), ("bit", 1)):
        if r.endswith(suffix):
            return int(float(r[: -len(suffix)]) * mult)
    raise ValueError(rate)


def rate_name(rate):
    bps = rate_bps(rate)
    return f"{bps / 1e9:g} Gbit/s" if bps >= 1e9 else f"{bps / 1e6:g} Mbit/s"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--doc", help="markdown file whose netbench section to replace")
    p.add_argument("--plot", help="PNG to write")
    p.add_argument("--share-plot",
                   help="PNG for the share phase's throughput over time (default: --plot, "
                        "when the results hold only that phase)")
    a = p.parse_args()
    meta, rows = load(a.results)
    if not rows:
        sys.exit(f"{a.results}: no measurements")
    # The share phase has tables of its own (bench/share_report.py).
    share = [x for x in rows if x.get("phase") == "share"]
    rows = [x for x in rows if x.get("phase") != "share"]
    if share:
        print(share_report.markdown(share, meta))
        if a.plot or a.share_plot:
            share_report.plot(share, a.share_plot or a.plot)
        if not rows:
            return
    r = Report(meta, rows)
    md = r.markdown()
    if a.doc:
        with open(a.doc) as fh:
            text = fh.read()
        if BEGIN not in text or END not in text:
            sys.exit(f"{a.doc}: no {BEGIN} ... {END} section")
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(a.doc, "w") as fh:
            fh.write(head + md + tail)
    else:
        print(md)
    if a.plot and not (share and not a.share_plot):
        r.plot(a.plot)


if __name__ == "__main__":
    main()
