"""The binding over torch tensors: CPU tensors of every type in place (zero-copy), the
async handle, and the CUDA path (skipped without a GPU)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import switchml  # noqa: E402
from conftest import run_ranks  # noqa: E402


def test_cpu_tensors_of_every_type_in_place(switch):
    def body(comm):
        r = comm.rank
        tensors = {
            torch.float32: torch.full((3000,), 1.0 + r),
            torch.int32: torch.arange(3000, dtype=torch.int32) * (r + 1),
            torch.float16: torch.full((500,), 0.25 * (r + 1), dtype=torch.float16),
            torch.bfloat16: torch.full((500,), 2.0 * (r + 1), dtype=torch.bfloat16),
        }
        for t in tensors.values():
            pointer = t.data_ptr()
            assert comm.allreduce(t) is t
            assert t.data_ptr() == pointer
        return tensors

    for tensors in run_ranks(2, body, switch=switch.address, job=1).values():
        assert torch.all(tensors[torch.float32] == 3.0)
        assert torch.equal(tensors[torch.int32], torch.arange(3000, dtype=torch.int32) * 3)
        assert torch.all(tensors[torch.float16] == 0.75)
        assert torch.all(tensors[torch.bfloat16] == 6.0)


def test_gradients_and_async_average(switch):
    def body(comm):
        w = torch.nn.Parameter(torch.zeros(1000))
        (w * (comm.rank + 1.0)).sum().backward()
        handle = comm.allreduce_async(w.grad, switchml.AVERAGE)
        handle.wait()
        assert handle.is_completed()
        return w.grad

    for grad in run_ranks(2, body, switch=switch.address, job=1).values():
        assert torch.allclose(grad, torch.full((1000,), 1.5))


def test_unsupported_tensors_are_refused_with_a_reason():
    def body(comm):
        with pytest.raises(TypeError, match="float64"):
            comm.allreduce(torch.zeros(4, dtype=torch.float64))
        with pytest.raises(ValueError, match="contiguous"):
            comm.allreduce(torch.zeros(4, 4).t())
        return True

    with switchml.Switch(["3:1"]) as s:
        run_ranks(1, body, switch=s.address, job=3)


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="no CUDA device: the hook's copy to host and back is untested here")
def test_cuda_buckets_go_through_host_memory():
    import switchml.torch as switchml_torch

    with switchml.Switch(["1:1"]) as s:
        with switchml.Communicator(rank=0, world_size=1, switch=s.address, job=1) as comm:
            t = torch.full((4096,), 2.0, device="cuda")
            future = switchml_torch._start(comm, t, switchml.SUM)
            assert future.wait() is t
            assert torch.all(t == 2.0) and t.device.type == "cuda"
            with pytest.raises(ValueError, match="cuda"):
                comm.allreduce(t)
