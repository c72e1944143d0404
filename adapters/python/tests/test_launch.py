"""Launch like Gloo: env:// rendezvous, ``backend="switchml"``, no switch started by hand
(rank 0 embeds one and tells the others through torch's store), DDP for a few steps,
over the backend alone and with the hook on the backend's own communicator (state None).

Debian's ``torchrun`` (torch 1.13) crashes on Python 3.11 before it starts any worker, so
the ranks are spawned with ``torch.multiprocessing``, each given the environment torchrun
gives (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK).
"""

import os

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from conftest import free_port  # noqa: E402


def train(local_rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(local_rank),
                      LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world))
    for name in ("SWITCHML_SWITCH", "SWITCHML_JOB", "SWITCHML_JOB_KEY"):
        os.environ.pop(name, None)
    import switchml.torch as switchml_torch

    dist.init_process_group("switchml")  # env://, as a torchrun worker does
    rank = dist.get_rank()
    torch.manual_seed(0)
    models = {
        "backend": torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2)),
        "hook": torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2)),
    }
    models["hook"].register_comm_hook(None, switchml_torch.allreduce_hook)
    mean = sum(range(1, world + 1)) / world
    for name, model in models.items():
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            optimizer.zero_grad()
            # A metric reduced asynchronously across the backward pass: it keeps its place
            # among the gradient buckets on every rank.
            metric = torch.tensor(float(rank))
            pending = dist.all_reduce(metric, async_op=True)
            model(torch.ones(3, 4) * (rank + 1)).sum().backward()
            pending.wait()
            assert metric.item() == sum(range(world)), (name, metric)
            grad = model.module.weight.grad
            assert torch.allclose(grad, torch.full((2, 4), 3.0 * mean)), (name, grad)
            optimizer.step()
        # Every rank took the same steps: the weights agree.
        weights = [torch.empty_like(model.module.weight) for _ in range(world)]
        dist.all_gather(weights, model.module.weight.detach())
        assert all(torch.equal(w, weights[0]) for w in weights), name
    stats = dist.distributed_c10d._get_default_group().stats()
    assert stats["switch_allreduce"] >= 6 and stats["tensors"] >= 6, stats
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 3])
def test_env_launch_with_an_embedded_switch_trains_ddp(world):
    mp.spawn(train, args=(world, free_port()), nprocs=world)


def test_a_worker_started_before_the_switch_retries_until_it_is_there(monkeypatch, caplog):
    """With SWITCHML_SWITCH set, a rank that finds nothing listening retries (up to the
    group's timeout) instead of failing at once."""
    import logging
    import threading
    import time
    from datetime import timedelta

    import switchml
    from switchml.torch import _launch

    port = free_port()
    monkeypatch.setenv("SWITCHML_SWITCH", f"127.0.0.1:{port}")
    monkeypatch.setenv("SWITCHML_JOB", "5")
    caplog.set_level(logging.INFO, logger="switchml.torch")
    result = {}

    def join():
        try:
            result["comm"], _ = _launch.connect(None, 0, 1, timedelta(seconds=120))
        except BaseException as e:  # noqa: BLE001 - reported below
            result["error"] = e

    joiner = threading.Thread(target=join)
    joiner.start()
    # Start the switch only once a try has found the port closed and said it retries.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and joiner.is_alive() and \
            not any("retrying" in r.getMessage() for r in caplog.records):
        time.sleep(0.05)
    assert any("retrying" in r.getMessage() for r in caplog.records), result
    with switchml.Switch(["5:1"], bind=f"127.0.0.1:{port}"):
        joiner.join(120)
        assert "error" not in result, result.get("error")
        comm = result["comm"]
        x = torch.ones(4)
        comm.allreduce(x)
        assert torch.all(x == 1.0)
        comm.close()


def reinit(rank, world, ports, address, key):
    os.environ.update(MASTER_ADDR="127.0.0.1", RANK=str(rank), WORLD_SIZE=str(world),
                      SWITCHML_SWITCH=address, SWITCHML_JOB="1", SWITCHML_JOB_KEY=key)
    import gc

    import switchml.torch  # noqa: F401

    for round_ in range(2):
        os.environ["MASTER_PORT"] = str(ports[round_])
        dist.init_process_group("switchml")
        comm = dist.distributed_c10d._get_default_group().comm
        t = torch.full((4,), float(round_ + 1))
        dist.all_reduce(t)
        assert torch.all(t == world * (round_ + 1)), (round_, t)
        dist.destroy_process_group()
        gc.collect()
        assert comm.closed, "the destroyed group's communicator is still in the job"


def test_destroy_leaves_the_job_so_the_group_can_start_again():
    """destroy_process_group ends the group's membership in the switch's job (its
    communicator is closed), and the same ranks join the same job again."""
    import switchml

    key = switchml.fresh_key()
    with switchml.Switch([(1, 2, 256, key)]) as s:
        ports = [free_port(), free_port()]
        mp.spawn(reinit, args=(2, ports, s.address, f"{key:x}"), nprocs=2)
