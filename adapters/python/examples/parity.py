"""Training parity: the same MLP on scikit-learn's digits, trained with DDP once over
Gloo's all-reduce and once through ``switchml.torch.allreduce_hook`` and a switch.

Same seeds, same data order, same model initialisation; only the gradient all-reduce
differs. Prints final training loss, test accuracy and time per step side by side, and
can write the numbers (``--json``) and both loss curves (``--plot``).

    python examples/parity.py --world 2 --epochs 30 --plot ../../docs/pytorch-parity.png

The switch is an in-process ``switchml.Switch`` (the daemon's code on a thread of the
launcher) unless ``--switch host:port`` names a running ``switchml switch --job 1:WORLD``.
"""

import argparse
import json
import os
import socket
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HIDDEN = 128
BATCH = 64  # global batch; each rank takes BATCH // world of it
LR = 0.05
MOMENTUM = 0.9


def load_digits(seed):
    """Return standardized (train_x, train_y, test_x, test_y): 80/20 of sklearn's digits."""
    from sklearn.datasets import load_digits as digits
    from sklearn.model_selection import train_test_split

    x, y = digits(return_X_y=True)
    x = x.astype(np.float32)
    tx, vx, ty, vy = train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)
    mean, std = tx.mean(axis=0), tx.std(axis=0) + 1e-3
    return (tx - mean) / std, ty, (vx - mean) / std, vy


def model(seed, hidden=HIDDEN):
    """The MLP 64-hidden-hidden-10 (bench/train_rank.py widens it), seeded."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(64, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, 10),
    )


def worker(rank, world, port, backend, switch, key, epochs, seed, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
    net = torch.nn.parallel.DistributedDataParallel(model(seed))
    comm = None
    if backend == "switchml":
        import switchml
        import switchml.torch as switchml_torch

        comm = switchml.Communicator(rank=rank, world_size=world, switch=switch, job=1,
                                     key=key, count=1024)
        net.register_comm_hook(comm, switchml_torch.allreduce_hook)
    tx, ty, vx, vy = load_digits(seed)
    tx, ty = torch.from_numpy(tx), torch.from_numpy(ty)
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    loss_fn = torch.nn.CrossEntropyLoss()
    per_rank = BATCH // world
    order_rng = np.random.default_rng(seed)
    losses, step_times = [], []
    for _ in range(epochs):
        order = torch.from_numpy(order_rng.permutation(len(tx)))
        for start in range(0, len(tx) - BATCH + 1, BATCH):
            mine = order[start + rank * per_rank:start + (rank + 1) * per_rank]
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = loss_fn(net(tx[mine]), ty[mine])
            loss.backward()
            opt.step()
            step_times.append(time.perf_counter() - t0)
            losses.append(loss.item())
    result = {"losses": losses, "step_times": step_times}
    if rank == 0:
        with torch.no_grad():
            result["train_loss"] = loss_fn(net.module(tx), ty).item()
            predicted = net.module(torch.from_numpy(vx)).argmax(dim=1).numpy()
            result["test_accuracy"] = float((predicted == vy).mean())
    if comm is not None:
        result["stats"] = comm.stats()
        comm.close()
    with open(os.path.join(out, f"{backend}-{rank}.json"), "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train(backend, world=2, epochs=10, seed=0, switch=None):
    """Train with ``backend`` ("gloo" or "switchml") and return the summary: per-step
    loss averaged over the ranks, final train loss, test accuracy, median step time."""
    import switchml

    key = switchml.fresh_key()
    local = None
    if backend == "switchml" and switch is None:
        local = switchml.Switch([(1, world, 256, key)])
        switch = local.address
    elif switch is not None:
        key = int(os.environ.get("SWITCHML_JOB_KEY", "0"), 16)
    try:
        with tempfile.TemporaryDirectory() as out:
            mp.spawn(worker, args=(world, free_port(), backend, switch, key, epochs, seed, out),
                     nprocs=world)
            ranks = []
            for r in range(world):
                with open(os.path.join(out, f"{backend}-{r}.json")) as f:
                    ranks.append(json.load(f))
    finally:
        if local is not None:
            local.stop()
    times = np.array([r["step_times"] for r in ranks]).max(axis=0)  # a step ends on all
    warm = times[min(10, len(times) // 10):]
    return {
        "backend": backend,
        "world": world,
        "epochs": epochs,
        "steps": len(times),
        "losses": np.mean([r["losses"] for r in ranks], axis=0).tolist(),
        "train_loss": ranks[0]["train_loss"],
        "test_accuracy": ranks[0]["test_accuracy"],
        "step_ms_median": float(np.median(warm) * 1e3),
        "stats": ranks[0].get("stats"),
    }


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for r, style in zip(results, ("-", "--")):
        ax.plot(r["losses"], style, lw=1,
                label=f"{r['backend']}: test acc {r['test_accuracy']:.3f}, "
                      f"final loss {r['train_loss']:.4f}")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (mean over ranks, per batch)")
    ax.set_title(f"MLP on sklearn digits, {results[0]['world']} workers, DDP: "
                 "Gloo vs switchml hook")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--switch", help="host:port of a running switch (else an in-process one)")
    p.add_argument("--json", help="write both summaries here")
    p.add_argument("--plot", help="write both loss curves here (PNG)")
    a = p.parse_args()
    results = [train(b, a.world, a.epochs, a.seed, a.switch) for b in ("gloo", "switchml")]
    print(f"{'':12}{'train loss':>12}{'test acc':>10}{'ms/step':>9}   ({a.world} workers, "
          f"{results[0]['steps']} steps)")
    for r in results:
        print(f"{r['backend']:12}{r['train_loss']:12.5f}{r['test_accuracy']:10.4f}"
              f"{r['step_ms_median']:9.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    if a.plot:
        plot(results, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
