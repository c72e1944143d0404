"""All-reduce throughput of PyTorch's gloo backend on 127.0.0.1, for `switchml bench`.

Run with /usr/bin/python3 (Debian's python3-torch; see scripts/install-gloo). Starts
--workers processes, all-reduces float32 tensors of each --sizes length --iterations times,
and prints one JSON line per size: the slowest rank's seconds and the CPU seconds of all
ranks together (getrusage, user + system).
"""

import argparse
import json
import os
import resource
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rank_main(rank, world, port, sizes, iterations, queue):
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    for n in sizes:
        x = torch.rand(n)
        dist.all_reduce(x)  # warm-up: connections and buffers
        dist.barrier()
        c0, t0 = cpu_seconds(), time.perf_counter()
        for _ in range(iterations):
            dist.all_reduce(x)
        queue.put((n, rank, time.perf_counter() - t0, cpu_seconds() - c0))
        dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--sizes", required=True, help="comma-separated element counts")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--port", type=int, required=True)
    a = p.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=rank_main, args=(r, a.workers, a.port, sizes, a.iterations, queue))
        for r in range(a.workers)
    ]
    for proc in procs:
        proc.start()
    results = {}
    for _ in range(len(sizes) * a.workers):
        n, rank, secs, cpu = queue.get(timeout=600)
        results.setdefault(n, []).append((secs, cpu))
    for proc in procs:
        proc.join(timeout=60)
    for n in sizes:
        rows = results.get(n, [])
        print(json.dumps({
            "workers": a.workers,
            "elements": n,
            "iterations": a.iterations,
            "seconds": max(s for s, _ in rows),
            "cpu_seconds": sum(c for _, c in rows),
        }), flush=True)


if __name__ == "__main__":
    main()
