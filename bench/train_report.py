"""Turn bench/trainbench.py's JSON lines into the training section of docs/benchmarks.md.

    python3 bench/train_report.py RESULTS.jsonl                      # print the section
    python3 bench/train_report.py RESULTS.jsonl --doc docs/benchmarks.md

With --doc, the text between `<!-- trainbench:begin -->` and `<!-- trainbench:end -->` is
replaced and the rest is kept. Per run: seconds per step is the median over the steps
after the warm-up of the slowest rank's step; time to the target accuracy is the training
time (the timed steps only, evaluations left out) up to the first evaluation at or above
the target, the slowest rank's. Per P and system: medians over the runs. Standard library
only, so that ./scripts/test runs its tests anywhere.
"""

import argparse
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (load, med, wire efficiency and bounds)

BEGIN, END = "<!-- trainbench:begin -->", "<!-- trainbench:end -->"
WARMUP = 5
SYSTEMS = ("gloo", "switchml")


def steps_to_target(evals, target):
    """The first evaluated step whose test accuracy is at least `target`, else None."""
    return next((step for step, acc in evals if acc >= target), None)


def time_to_target(rank_step_seconds, steps):
    """Training seconds of the slowest rank over its first `steps` steps (None: never)."""
    if steps is None:
        return None
    return max(sum(ranks[:steps]) for ranks in rank_step_seconds)


def step_median(step_seconds, warmup=WARMUP):
    """Median step time past the warm-up (all steps if there are too few)."""
    return statistics.median(step_seconds[warmup:] if len(step_seconds) > 2 * warmup
                             else step_seconds)


def summarize_run(row, target):
    steps = steps_to_target(row["evals"], target)
    return {
        "run": row["run"],
        "step_seconds": step_median(row["step_seconds"]),
        "steps_to_target": steps,
        "time_to_target": time_to_target(row["rank_step_seconds"], steps),
        "final_accuracy": row["final_accuracy"],
        "host_util": row.get("host_util"),
        "retransmissions": sum(s.get("retransmissions", 0) for s in row["stats"] or [{}])
        if row["system"] == "switchml" else None,
    }


class TrainReport:
    def __init__(self, meta, rows):
        self.meta = meta or {}
        args = self.meta.get("args", {})
        self.target = args.get("target", 0.95)
        self.rate = args.get("rate", "100mbit")
        self.bounds = report.Report(self.meta, [])
        self.failed = defaultdict(int)
        self.runs = defaultdict(dict)  # (world, system) -> run -> summary
        self.model = None
        for r in rows:
            if r.get("phase") != "train":
                continue
            if "error" in r:
                self.failed[(r["world"], r["system"])] += 1
                continue
            self.model = self.model or {k: r[k] for k in ("hidden", "parameters",
                                                          "gradient_bytes")}
            self.runs[(r["world"], r["system"])][r["run"]] = summarize_run(r, self.target)

    def worlds(self):
        return sorted({w for w, _ in self.runs})

    def median(self, world, system, field):
        return report.med([s[field] for s in self.runs[(world, system)].values()])

    def paired(self, world, field):
        """Median over runs of Gloo's value over switchml's in the same run."""
        g, s = self.runs[(world, "gloo")], self.runs[(world, "switchml")]
        return report.med([g[k][field] / s[k][field] for k in g.keys() & s.keys()
                           if g[k][field] and s[k][field]])

    def row(self, world):
        m = {(sys_, f): self.median(world, sys_, f) for sys_ in SYSTEMS
             for f in ("step_seconds", "time_to_target", "final_accuracy", "steps_to_target",
                       "host_util")}
        size, bps = self.model["gradient_bytes"], report.rate_bps(self.rate)
        reached = {s: sum(r["steps_to_target"] is not None
                          for r in self.runs[(world, s)].values()) for s in SYSTEMS}
        n = {s: len(self.runs[(world, s)]) for s in SYSTEMS}
        return {
            "world": world,
            "runs": n,
            "reached": reached,
            **{f"{s}_{f}": m[(s, f)] for s, f in m},
            "step_ratio": report.ratio(m[("gloo", "step_seconds")],
                                       m[("switchml", "step_seconds")]),
            "step_ratio_paired": self.paired(world, "step_seconds"),
            "tta_ratio": report.ratio(m[("gloo", "time_to_target")],
                                      m[("switchml", "time_to_target")]),
            "bound_ring": self.bounds.bound_ring(size, bps, world),
            "bound_in": self.bounds.bound_in(size, bps),
        }

    def markdown(self):
        f = report.f
        pct = self.target * 100
        md = self.model
        lines = [
            "",
            f"Model: MLP 64-{md['hidden']}-{md['hidden']}-10, {md['parameters']:,} parameters, "
            f"{md['gradient_bytes']:,} bytes of fp32 gradients a step; links "
            f"{report.rate_name(self.rate)}; target: {pct:g}% test accuracy; "
            f"{self.meta.get('args', {}).get('steps', '?')} steps a run; "
            f"commit `{self.meta.get('git', '?')}`, {self.meta.get('date', '?')}.",
            "",
            f"| P | Gloo s/step | switchml s/step | × (paired) | Gloo s to {pct:g}% | "
            f"switchml s to {pct:g}% | × | steps to {pct:g}% Gloo / switchml | "
            "final accuracy Gloo / switchml | all-reduce bound s/step ring / in-network | "
            "machine busy Gloo / switchml | runs (failed) |",
            "|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|---|",
        ]
        for w in self.worlds():
            r = self.row(w)
            failed = "/".join(str(self.failed[(w, s)]) for s in SYSTEMS)
            lines.append(
                f"| {w} | {f(r['gloo_step_seconds'])} | {f(r['switchml_step_seconds'])} | "
                f"{f(r['step_ratio'], '{:.2f}×')} ({f(r['step_ratio_paired'], '{:.2f}×')}) | "
                f"{f(r['gloo_time_to_target'], '{:.1f}')} | "
                f"{f(r['switchml_time_to_target'], '{:.1f}')} | {f(r['tta_ratio'], '{:.2f}×')} | "
                f"{f(r['gloo_steps_to_target'], '{:g}')} / "
                f"{f(r['switchml_steps_to_target'], '{:g}')} | "
                f"{f(r['gloo_final_accuracy'], '{:.4f}')} / "
                f"{f(r['switchml_final_accuracy'], '{:.4f}')} | "
                f"{r['bound_ring']:.3f} / {r['bound_in']:.3f} | "
                f"{f(r['gloo_host_util'], '{:.0%}')} / {f(r['switchml_host_util'], '{:.0%}')} | "
                f"{r['runs']['gloo']} / {r['runs']['switchml']} ({failed}) |")
        lines += ["", f"Time to {pct:g}%: the median over the runs that reached it (– where none "
                      "did within its steps).", "",
                  "Per run (seconds per step, Gloo / switchml, and the ratio):", ""]
        for w in self.worlds():
            g, s = self.runs[(w, "gloo")], self.runs[(w, "switchml")]
            cells = [f"{g[k]['step_seconds']:.3f} / {s[k]['step_seconds']:.3f} "
                     f"({g[k]['step_seconds'] / s[k]['step_seconds']:.2f}×)"
                     for k in sorted(g.keys() & s.keys())]
            lines.append(f"- P = {w}: " + "; ".join(cells))
        return "\n".join(lines) + "\n"


def replace_section(text, section):
    """`text` with the part between the trainbench markers replaced by `section`."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"no {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + section + END + tail


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results")
    p.add_argument("--doc", help="markdown file whose trainbench section to replace")
    a = p.parse_args()
    meta, rows = report.load(a.results)
    r = TrainReport(meta, rows)
    if not r.runs:
        sys.exit(f"{a.results}: no training runs")
    md = r.markdown()
    if a.doc:
        with open(a.doc) as fh:
            text = fh.read()
        with open(a.doc, "w") as fh:
            fh.write(replace_section(text, md))
    else:
        print(md)


if __name__ == "__main__":
    main()
