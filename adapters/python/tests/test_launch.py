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
            model(torch.ones(3, 4) * (rank + 1)).sum().backward()
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
