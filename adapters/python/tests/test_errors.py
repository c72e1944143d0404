"""Typed exceptions a PyTorch user can catch, from the backend and from the DDP hook, and
a process that lives on after them; Rust logs reaching Python's ``logging``."""

import logging
import os

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from conftest import free_port  # noqa: E402

import switchml  # noqa: E402


def refusals(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    os.environ.pop("SWITCHML_SWITCH", None)
    import switchml.torch  # noqa: F401

    dist.init_process_group("switchml", rank=rank, world_size=world)
    # Raised at wait(), typed, named (not a ReduceOp repr); the group goes on.
    with pytest.raises(switchml.UnsupportedError, match="BAND of torch.float32"):
        dist.all_reduce(torch.ones(3), dist.ReduceOp.BAND)
    with pytest.raises(switchml.UnsupportedError, match="PREMUL_SUM|reduction"):
        op = dist._make_nccl_premul_sum(2.0) if hasattr(dist, "_make_nccl_premul_sum") else 99
        dist.all_reduce(torch.ones(3), op)
    t = torch.ones(3)
    dist.all_reduce(t)
    assert torch.all(t == world)
    dist.destroy_process_group()


def test_backend_refusals_are_typed_and_the_group_goes_on():
    mp.spawn(refusals, args=(2, free_port()), nprocs=2)


def hook_failure(rank, world, port, address, key, outcome):
    """Rank 1 leaves after DDP's set-up; rank 0's next backward must raise the typed
    RankFailedError naming rank 1, catchable, and the process must live on."""
    import switchml.torch as switchml_torch

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
    comm = switchml.Communicator(rank=rank, world_size=world, switch=address, job=1,
                                 key=int(key, 16), rto_ms=50, retries=4)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    model.register_comm_hook(comm, switchml_torch.allreduce_hook)
    for _ in range(2):  # good steps on both ranks (the second rebuilds DDP's buckets)
        model(torch.ones(3, 4)).sum().backward()
    dist.barrier()
    if rank == 1:
        os._exit(0)  # a rank that dies: no Leave, no more contributions
    try:
        model(torch.ones(3, 4)).sum().backward()
    except switchml.RankFailedError as e:
        outcome.put(("caught", e.rank, str(e)))
    else:
        outcome.put(("nothing raised", None, ""))
    os._exit(0)  # the Gloo group has a dead peer: skip its teardown


def test_a_failed_bucket_raises_the_typed_exception_from_backward():
    key = switchml.fresh_key()
    outcome = mp.get_context("spawn").SimpleQueue()
    with switchml.Switch([(1, 2, 256, key)]) as s:
        mp.spawn(hook_failure, args=(2, free_port(), s.address, f"{key:x}", outcome), nprocs=2)
    kind, rank, message = outcome.get()
    assert (kind, rank) == ("caught", 1), message
    # The switch names the killed rank (protocol.md §4.3), before any peer's stall probe.
    assert "rank 1 is gone" in message, message


def test_rust_logs_reach_python_logging(caplog):
    """The fallback to the host ring is logged (docs/fallback.md), through `logging`."""
    import threading

    rendezvous = f"127.0.0.1:{free_port()}"
    caplog.set_level(logging.INFO)
    switchml.reset_logging()
    done = []

    def rank(r):
        with switchml.Communicator(rank=r, world_size=2, switch=switch.address, job=7,
                                   fallback_addr=rendezvous, fallback_timeout_ms=5000) as c:
            c.allreduce(torch.ones(10))
            done.append(c.fallback_reason)

    with switchml.Switch(["1:2"]) as switch:
        threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
        [t.start() for t in threads]
        [t.join(60) for t in threads]
    assert len(done) == 2
    # Records arrive through the logging thread: give it a generous while.
    import time
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            r.name.startswith("switchml_worker") for r in caplog.records):
        time.sleep(0.1)
    names = {r.name for r in caplog.records}
    assert any(n.startswith("switchml_worker") for n in names), names
    assert any("fall" in r.getMessage().lower() for r in caplog.records
               if r.name.startswith("switchml_worker")), [r.getMessage() for r in caplog.records]
