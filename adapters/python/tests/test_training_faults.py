"""What real training loops do to a backend (issue 27, items 1 and 2): an Inf in one rank's
gradients (fp16 mixed precision, GradScaler), a rank busy for a minute, a rank killed.

Inf/NaN travel through the switch like Gloo passes them (protocol.md §5.4), and liveness is
apart from progress (§4.3): the switch names a silent rank, a busy one is waited for.
"""

import os
import time
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from conftest import free_port  # noqa: E402

import switchml  # noqa: E402



def init(rank, world, port, timeout=timedelta(minutes=30)):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    os.environ.pop("SWITCHML_SWITCH", None)
    import switchml.torch  # noqa: F401

    dist.init_process_group("switchml", rank=rank, world_size=world, timeout=timeout)


def grad_scaler_step(rank, world, port, outcome):
    """GradScaler's logic on CPU: unscale, find Inf, skip the step, lower the scale."""
    init(rank, world, port)
    import switchml.torch as switchml_torch

    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    model.register_comm_hook(None, switchml_torch.allreduce_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scale, before = 2.0 ** 16, model.module.weight.detach().clone()
    # Rank 1's input overflows its loss in fp16 terms: its gradients hold an Inf.
    x = torch.ones(3, 4) * (float("inf") if rank == 1 else 1.0)
    (model(x).sum() * scale).backward()
    found_inf = torch.zeros(())
    for p in model.parameters():
        p.grad.div_(scale)  # unscale
        found_inf = torch.maximum(found_inf, (~torch.isfinite(p.grad)).any().float())
    dist.all_reduce(found_inf, dist.ReduceOp.MAX)  # as GradScaler does across ranks
    if found_inf.item() == 0.0:
        optimizer.step()
    else:
        scale *= 0.5
    outcome.put((rank, found_inf.item(), scale,
                 torch.equal(model.module.weight.detach(), before)))
    dist.destroy_process_group()


def test_an_inf_on_one_rank_skips_the_step_on_every_rank():
    outcome = mp.get_context("spawn").SimpleQueue()
    mp.spawn(grad_scaler_step, args=(2, free_port(), outcome), nprocs=2)
    for _ in range(2):
        rank, found, scale, unchanged = outcome.get()
        assert (found, scale, unchanged) == (1.0, 2.0 ** 15, True), rank


def busy_rank(rank, world, port):
    init(rank, world, port, timeout=timedelta(minutes=5))
    t = torch.ones(10)
    dist.all_reduce(t)
    if rank == 0:
        time.sleep(60)  # validation, a checkpoint: rank 0 alone is busy
    dist.all_reduce(t)
    assert torch.all(t == world * world)
    dist.destroy_process_group()


def test_a_rank_busy_for_a_minute_does_not_fail_the_job():
    mp.spawn(busy_rank, args=(2, free_port()), nprocs=2)


def killed_rank(rank, world, port, outcome):
    init(rank, world, port)
    t = torch.ones(10)
    dist.all_reduce(t)
    dist.barrier()
    if rank == world - 1:
        os._exit(0)  # killed: no Leave, nothing more
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        outcome.put((rank, None, time.monotonic() - start))
    except switchml.RankFailedError as e:
        outcome.put((rank, e.rank, time.monotonic() - start))
    os._exit(0)  # the job is broken: skip its teardown


def test_a_killed_rank_is_named_within_3_seconds():
    world = 3
    outcome = mp.get_context("spawn").SimpleQueue()
    mp.spawn(killed_rank, args=(world, free_port(), outcome), nprocs=world)
    for _ in range(world - 1):
        rank, blamed, seconds = outcome.get()
        assert blamed == world - 1, rank
        assert seconds < 3.0, (rank, seconds)
