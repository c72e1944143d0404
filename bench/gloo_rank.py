"""One rank of the Gloo baseline for bench/run-netbench: all-reduce float32 tensors through
torch.distributed's gloo backend (CPU, TCP; its ring algorithm) and time them.

Run with /usr/bin/python3 (Debian's python3-torch), one process per worker namespace, with
GLOO_SOCKET_IFNAME naming the worker's link. For each size it all-reduces a tensor whose
values are small multiples of 1/512, so that every order of additions gives the exact sum,
and checks the result against that sum bit for bit. Prints one JSON line per size:
seconds (this rank, timed region only), cpu_seconds (this process, user + system, same
region), the region's start and end as Unix time, and whether the result was exact.
"""

import argparse
import json
import resource
import time

import numpy as np
import torch
import torch.distributed as dist


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


BLOCK = 1 << 22


def rank_values(rank, lo, hi):
    """Rank `rank`'s elements lo..hi: ((i*7 + rank*13) mod 1025 − 512) / 512."""
    i = np.arange(lo, hi, dtype=np.int64)
    return ((i * 7 + rank * 13) % 1025 - 512).astype(np.float32) / np.float32(512)


def rank_input(rank, n):
    x = np.empty(n, dtype=np.float32)
    for lo in range(0, n, BLOCK):
        hi = min(n, lo + BLOCK)
        x[lo:hi] = rank_values(rank, lo, hi)
    return x


def is_exact_sum(x, world):
    """Whether x is the sum of every rank's input, bit for bit (the values are dyadic)."""
    for lo in range(0, len(x), BLOCK):
        hi = min(len(x), lo + BLOCK)
        total = sum(rank_values(r, lo, hi).astype(np.float64) for r in range(world))
        if not np.array_equal(x[lo:hi], total.astype(np.float32)):
            return False
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True, help="host:port of rank 0's rendezvous store")
    p.add_argument("--sizes", required=True, help="comma-separated tensor sizes in bytes")
    p.add_argument("--warmup-bytes", type=int, default=1 << 20)
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://{a.master}", rank=a.rank, world_size=a.world
    )
    warm = torch.from_numpy(rank_input(a.rank, a.warmup_bytes // 4))
    dist.all_reduce(warm)  # connections, buffers, congestion windows
    for size in (int(s) for s in a.sizes.split(",")):
        n = size // 4
        x = torch.from_numpy(rank_input(a.rank, n))
        dist.barrier()
        c0, w0, t0 = cpu_seconds(), time.time(), time.perf_counter()
        dist.all_reduce(x)
        t1, w1, c1 = time.perf_counter(), time.time(), cpu_seconds()
        exact = is_exact_sum(x.numpy(), a.world)
        print(json.dumps({
            "system": "gloo", "rank": a.rank, "world": a.world, "bytes": size,
            "seconds": t1 - t0, "cpu_seconds": c1 - c0, "start": w0, "end": w1,
            "verified": exact,
        }), flush=True)
        del x
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
