"""One rank of bench/run-trainbench: data-parallel training of a wide MLP on scikit-learn's
digits with PyTorch DDP, its gradients averaged either by Gloo (DDP's default all-reduce)
or by ``switchml.torch.allreduce_hook`` through a ``switchml switch`` daemon.

Run one process per worker namespace with the venv's python (it must import the
``switchml`` wheel and Debian's torch). The model and data are
adapters/python/examples/parity.py's (same seeds, same data order on every system), only
wider, so that a step's gradients are megabytes against milliseconds of compute and the
links set the step time.

Every rank evaluates test accuracy every --eval-every steps (all ranks at once, so none
waits for another; the evaluation is outside the timed steps). A step is timed from
``zero_grad`` to the end of ``opt.step()``, so it includes DDP's gradient all-reduce, which
overlaps the backward pass. Prints one JSON line: the per-step times, the evaluations,
the final accuracy, the model's size, this process's CPU time over the steps and, for
switchml, the communicator's counters.
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "adapters", "python", "examples"))
import parity  # noqa: E402  (model, data, batch and optimizer settings)


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def accuracy(net, vx, vy):
    with torch.no_grad():
        return float((net(vx).argmax(dim=1).numpy() == vy).mean())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--system", choices=["gloo", "switchml"], required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True, help="host:port of rank 0's TCP store")
    p.add_argument("--switch", help="host:port of the switchml switch (switchml only)")
    p.add_argument("--key", default="0", help="the job's key in hex (switchml only)")
    p.add_argument("--job", type=int, default=0)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--window", type=int, default=128)
    p.add_argument("--count", type=int, default=256)
    p.add_argument("--lanes", type=int, default=1)
    p.add_argument("--rto-ms", type=int, default=30)
    p.add_argument("--coalesce-us", type=int, default=500)
    a = p.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{a.master}", rank=a.rank,
                            world_size=a.world)
    module = parity.model(a.seed, a.hidden)
    net = torch.nn.parallel.DistributedDataParallel(module)
    comm = None
    if a.system == "switchml":
        import switchml
        import switchml.torch as switchml_torch

        comm = switchml.Communicator(
            rank=a.rank, world_size=a.world, switch=a.switch, job=a.job, key=int(a.key, 16),
            lanes=a.lanes, window=a.window, count=a.count, rto_ms=a.rto_ms,
            coalesce_us=a.coalesce_us)
        net.register_comm_hook(comm, switchml_torch.allreduce_hook)
    tx, ty, vx, vy = parity.load_digits(a.seed)
    tx, ty, vx = torch.from_numpy(tx), torch.from_numpy(ty), torch.from_numpy(vx)
    opt = torch.optim.SGD(net.parameters(), lr=parity.LR, momentum=parity.MOMENTUM)
    loss_fn = torch.nn.CrossEntropyLoss()
    per_rank = parity.BATCH // a.world
    order_rng = np.random.default_rng(a.seed)
    batches = []  # (epoch order, start) for every step, the same on every rank and system
    while len(batches) < a.steps:
        order = torch.from_numpy(order_rng.permutation(len(tx)))
        batches += [(order, s) for s in range(0, len(tx) - parity.BATCH + 1, parity.BATCH)]

    dist.barrier()
    step_times, evals, losses = [], [], []
    start, cpu0 = time.time(), cpu_seconds()
    for step in range(a.steps):
        order, s = batches[step]
        mine = order[s + a.rank * per_rank:s + (a.rank + 1) * per_rank]
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(net(tx[mine]), ty[mine])
        loss.backward()
        opt.step()
        step_times.append(time.perf_counter() - t0)
        losses.append(loss.item())
        if (step + 1) % a.eval_every == 0 or step + 1 == a.steps:
            evals.append([step + 1, accuracy(module, vx, vy)])
    end, cpu = time.time(), cpu_seconds() - cpu0
    params = sum(t.numel() for t in module.parameters())
    result = {
        "rank": a.rank,
        "system": a.system,
        "world": a.world,
        "hidden": a.hidden,
        "parameters": params,
        "gradient_bytes": 4 * params,
        "step_seconds": step_times,
        "losses": losses,
        "evals": evals,
        "final_accuracy": evals[-1][1],
        "cpu_seconds": cpu,
        "start": start,
        "end": end,
    }
    if comm is not None:
        result["stats"] = comm.stats()
        comm.close()
    print(json.dumps(result), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
