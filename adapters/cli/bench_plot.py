"""Draw `switchml bench --json` results: aggregated elements/s against the number of
workers, switchml-rs and Gloo, one line per tensor size. Usage: bench_plot.py JSON PNG."""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    rows = json.load(open(sys.argv[1]))["bench"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for size in sorted({r["elements"] for r in rows}):
        mine = [r for r in rows if r["elements"] == size]
        for system, style in (("switchml", "o-"), ("gloo", "s--")):
            points = [(r["workers"], r[system]["elements_per_sec"] / 1e6)
                      for r in mine if r.get(system)]
            if points:
                xs, ys = zip(*points)
                label = f"{'switchml-rs' if system == 'switchml' else 'Gloo'}, {size / 2**20:g} Mi elements"
                ax.plot(xs, ys, style, label=label)
    ax.set_xlabel("workers (P)")
    ax.set_ylabel("aggregated elements/s (millions)")
    ax.set_title("loopback all-reduce of f32 tensors")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
