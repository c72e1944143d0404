"""DDP through the switch, in spawned processes: the communication hook, and the
"switchml" torch.distributed backend's collectives."""


import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from conftest import free_port  # noqa: E402

import switchml  # noqa: E402


def backend_and_hook(rank, world, port, address, key):
    import os

    import switchml.torch as switchml_torch

    os.environ.update(SWITCHML_SWITCH=address, SWITCHML_JOB="1", SWITCHML_JOB_KEY=key)
    dist.init_process_group("switchml", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
    group = dist.distributed_c10d._get_default_group()
    assert group.getBackendName() == "switchml"

    t = torch.full((5,), float(rank + 1))
    dist.all_reduce(t)
    assert torch.all(t == 3.0), t
    b = torch.arange(4, dtype=torch.float64) * (rank + 1)
    dist.broadcast(b, src=1)
    assert torch.equal(b, torch.arange(4, dtype=torch.float64) * 2), b
    out = [torch.zeros(3, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(out, torch.full((3,), 7 * rank, dtype=torch.int64))
    assert [int(o[0]) for o in out] == [0, 7], out
    dist.barrier()

    # DDP over the backend alone, then with the hook (asynchronous futures).
    plain = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    plain(torch.ones(3, 4) * (rank + 1)).sum().backward()
    hooked = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    hooked.register_comm_hook(group.comm, switchml_torch.allreduce_hook)
    for _ in range(3):
        hooked.zero_grad()
        hooked(torch.ones(3, 4) * (rank + 1)).sum().backward()
    for m in (plain, hooked):
        assert torch.allclose(m.module.weight.grad, torch.full((2, 4), 4.5)), m.module.weight.grad
        assert torch.allclose(m.module.bias.grad, torch.full((2,), 3.0))
    dist.destroy_process_group()


def test_ddp_over_the_switchml_backend_and_hook():
    key = switchml.fresh_key()
    with switchml.Switch([(1, 2, 256, key)]) as s:
        mp.spawn(backend_and_hook, args=(2, free_port(), s.address, f"{key:x}"), nprocs=2)
        assert s.counters()["received"] > 0


def hooked_on_cuda(rank, world, port, address, key):
    """DDP of a model on the GPU over Gloo, its buckets averaged through the switch: the
    hook copies each CUDA bucket to host memory and the average back."""
    import switchml.torch as switchml_torch

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
    comm = switchml.Communicator(rank=rank, world_size=world, switch=address, job=1,
                                 key=int(key, 16))
    model = torch.nn.Linear(4, 2).cuda()
    hooked = torch.nn.parallel.DistributedDataParallel(model)
    hooked.register_comm_hook(comm, switchml_torch.allreduce_hook)
    for _ in range(3):
        hooked.zero_grad()
        hooked(torch.ones(3, 4, device="cuda") * (rank + 1)).sum().backward()
    grad = hooked.module.weight.grad
    assert grad.device.type == "cuda"
    assert torch.allclose(grad.cpu(), torch.full((2, 4), 4.5)), grad
    assert torch.allclose(hooked.module.bias.grad.cpu(), torch.full((2,), 3.0))
    comm.close()
    dist.destroy_process_group()


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="no CUDA device: the hook's copies to host and back are untested here")
def test_ddp_on_cuda_through_the_hook():
    key = switchml.fresh_key()
    with switchml.Switch([(1, 2, 256, key)]) as s:
        mp.spawn(hooked_on_cuda, args=(2, free_port(), s.address, f"{key:x}"), nprocs=2)
        assert s.counters()["received"] > 0
