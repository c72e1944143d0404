"""The share phase's table and throughput-over-time plot (bench/share_phase.py rows); called
by bench/report.py for rows with "phase": "share"."""

import statistics


def fmt(x, f="{:.1f}", none="–"):
    return none if x is None else f.format(x)


def mbit(x):
    return fmt(None if x is None else x / 1e6)


def rtt_stats(row):
    """Median and 99th percentile ping round trip over the shared period, and ping loss, for
    each pinging rank."""
    lo = row.get("lead_seconds", 0) + 2.0
    out = []
    for r in row.get("rtt", []):
        ms = sorted(m for t, m in r["ms"] if t >= lo)
        sr = r.get("sent_received")
        loss = None if not sr or not sr[0] else 100 * (sr[0] - sr[1]) / sr[0]
        if ms:
            p99 = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
            out.append((r["rank"], statistics.median(ms), p99, loss))
        else:
            out.append((r["rank"], None, None, loss))
    return out


def allreduce_times(row, who):
    """Median all-reduce time of job `who` shared and alone, as table text."""
    def median_of(key):
        got = row.get(key) or {}
        # Rows of the first runs keep one list for rank 0 of every job: only one job's is clear.
        jobs = [j for j in row["goodput_bps"] if j != "tcp"]
        xs = got.get(who, []) if isinstance(got, dict) else got if jobs == [who] else []
        return statistics.median(xs) if xs else None
    shared = median_of("allreduce_seconds_shared")
    if who == "tcp" or shared is None:
        return "–"
    return f"{fmt(shared, '{:.2f}')} / {fmt(median_of('allreduce_seconds_alone'), '{:.2f}')}"


def markdown(rows, meta):
    rows = [r for r in rows if "error" not in r]
    lines = ["### Shared links (`--phases share`)", ""]
    lines += [
        "| scenario | variant | who | goodput (Mbit/s) | alone | share of link | Jain | "
        "all-reduce shared / alone (s) | ping rtt median / p99 (ms), loss | tbf drops up / down "
        "(% of packets) | collapse |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rate = r["rate_bps"]
        q = r["qdisc"]
        up = q["up_dropped"] / max(1, q["up_sent"] + q["up_dropped"]) * 100
        down = q["down_dropped"] / max(1, q["down_sent"] + q["down_dropped"]) * 100
        pings = "; ".join(f"w{k}: {fmt(m)} / {fmt(p)}, {fmt(l, '{:.1f}%')}"
                          for k, m, p, l in rtt_stats(r))
        for i, (who, g) in enumerate(r["goodput_bps"].items()):
            # A job's link share in wire bytes: a 1 KiB chunk travels in a 1086 B frame; the
            # TCP flow's, 1448 B of payload in a 1514 B frame.
            wire = 1086 / 1024 if who != "tcp" else 1514 / 1448
            first = i == 0
            times = allreduce_times(r, who)
            lines.append("| " + " | ".join([
                r["scenario"] if first else "",
                r["variant"] if first else "",
                "TCP" if who == "tcp" else f"job {who}",
                mbit(g),
                mbit(r.get("goodput_alone_bps", {}).get(who)),
                fmt(None if g is None else 100 * g * wire / rate, "{:.0f}%"),
                fmt(r.get("jain"), "{:.3f}") if first else "",
                times,
                pings if first else "",
                f"{q['up_dropped']} / {q['down_dropped']} ({up:.2f}% / {down:.2f}%)" if first else "",
                ("yes" if r["collapse"] else "no") if first else "",
            ]) + " |")
    lines.append("")
    steady = [r for r in rows if r["scenario"] == "incast"]
    for r in steady:
        q = r["qdisc"]
        pct = q["down_steady_dropped"] / max(1, q["down_steady_sent"] + q["down_steady_dropped"]) * 100
        peak = max((v for k, v in q["max_backlog_bytes"].items() if k.startswith("nb-sw/")),
                   default=0)
        lines.append(f"Incast ({r['variant']}, window {r.get('window')}): steady-state loss at the "
                     f"switch's downlink queues (after the first 5 s) {pct:.3f}% "
                     f"({q['down_steady_dropped']} of {q['down_steady_sent'] + q['down_steady_dropped']} "
                     f"packets), peak downlink backlog {peak / 1e3:.0f} kB.")
    for r in rows:
        if r.get("foreign_cpu_seconds") is not None:
            span = max(1e-9, r["end"] - r["start"])
            lines.append(f"{r['scenario']} ({r['variant']}): host {100 * r.get('host_util', 0):.0f}% "
                         f"busy; other load took {r['foreign_cpu_seconds'] / span:.2f} of the "
                         f"{meta.get('cpus', '?') if meta else '?'} cores"
                         + (" (disturbed)" if r.get("disturbed") else "") + ".")
        if r.get("failed"):
            lines.append(f"{r['scenario']} ({r['variant']}): ranks that failed: {r['failed']}")
        if r.get("tcp"):
            t = r["tcp"]
            lines.append(f"TCP flow ({r['variant']}): {t.get('congestion')}, "
                         f"{t.get('retransmits')} retransmits, received {mbit(t.get('received_bps'))} Mbit/s")
    return "\n".join(lines) + "\n"


def plot(rows, path):
    """Throughput over time: a row of panels per scenario, a column per variant (side by
    side, on one time axis)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in rows if "error" not in r]
    if not rows:
        return
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    def key(r):
        return (r["scenario"], tuple(r.get("slots") or ()), r.get("run", 0))
    keys = list(dict.fromkeys(key(r) for r in rows))
    cell = {(key(r), r["variant"]): r for r in rows}
    fig, axes = plt.subplots(len(keys), len(variants), figsize=(8 * len(variants), 2.6 * len(keys)),
                             squeeze=False, sharex="row")
    for i, k in enumerate(keys):
        for j, v in enumerate(variants):
            ax, r = axes[i, j], cell.get((k, v))
            if r is None:
                ax.set_axis_off()
                continue
            draw(ax, r, v if len(variants) > 1 else None)
    for ax in axes[-1, :]:
        ax.set_xlabel("seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def draw(ax, r, variant):
    for who, pts in r["series_bps"].items():
        if pts:
            ax.plot([t for t, _ in pts], [v / 1e6 for _, v in pts],
                    label="TCP (iperf3)" if who == "tcp" else f"switchml-rs job {who}")
    ax.axhline(r["rate_bps"] / 1e6, color="grey", lw=0.5, ls="--")
    if r.get("lead_seconds"):
        ax.axvline(r["lead_seconds"], color="grey", lw=0.5)
    slots = f", slots {'/'.join(map(str, r['slots']))}" if r.get("slots") else ""
    label = f"SWITCHML_CONGESTION={variant}" if variant and variant != "default" else r["variant"]
    ax.set_title(f"{r['scenario']} ({label}{slots})", fontsize=9)
    ax.set_ylabel("Mbit/s")
    ax.set_ylim(0, r["rate_bps"] / 1e6 * 1.1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
