"""PyTorch integration: a DDP communication hook and a ``"switchml"`` backend.

- ``allreduce_hook(state, bucket)``: for ``DistributedDataParallel.register_comm_hook``.
  It averages each gradient bucket through the switch and returns a
  ``torch.futures.Future`` that a background thread completes, so the all-reduce overlaps
  the rest of the backward pass. ``state`` is a ``switchml.Communicator`` (or anything with
  a ``comm`` attribute holding one). CUDA buckets are copied to host memory and back.
  DDP still needs a process group for its start-up broadcast of the parameters (Gloo will
  do, or the ``"switchml"`` backend below).
- ``ProcessGroupSwitchML`` and ``register_backend()``: a Python-level ``torch.distributed``
  backend, registered under the name ``"switchml"`` when this module is imported, so
  ``dist.init_process_group("switchml", ...)`` works. It serves all_reduce (sum, and
  average where torch has it), broadcast, all_gather and barrier; broadcast and
  all_gather move raw bytes as int32 sums that only one rank contributes to (exact, since
  the switch adds int32 exactly). The switch's address and the job key come from the
  environment (``SWITCHML_SWITCH``, ``SWITCHML_JOB``, ``SWITCHML_JOB_KEY``, ...).
"""

import inspect
import queue
import threading
import weakref
from datetime import timedelta
from typing import Any, List

import numpy as np
import torch
import torch.distributed as dist

from . import AVERAGE, SUM, Communicator, Handle

__all__ = ["ProcessGroupSwitchML", "allreduce_hook", "register_backend"]


class _Completer:
    """One thread per communicator that waits on handles in submission order and
    completes their futures (waiting releases the GIL)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="switchml-completer", daemon=True)
        self._thread.start()

    def submit(self, handle: Handle, host: torch.Tensor, target: torch.Tensor,
               future: torch.futures.Future) -> None:
        self._queue.put((handle, host, target, future))

    def _run(self) -> None:
        while True:
            handle, host, target, future = self._queue.get()
            try:
                handle.wait()
                if target is not host:
                    target.copy_(host)
                future.set_result(target)
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits
                future.set_exception(e)


_completers: "weakref.WeakKeyDictionary[Communicator, _Completer]" = (
    weakref.WeakKeyDictionary()
)
_completers_lock = threading.Lock()


def _completer(comm: Communicator) -> _Completer:
    with _completers_lock:
        c = _completers.get(comm)
        if c is None:
            c = _completers[comm] = _Completer()
        return c


def _start(comm: Communicator, tensor: torch.Tensor, op: str) -> torch.futures.Future:
    """Start an all-reduce of ``tensor`` (any device) and return a future of it."""
    host = tensor if tensor.device.type == "cpu" else tensor.to("cpu")
    future: torch.futures.Future = torch.futures.Future()
    handle = comm.allreduce_async(host, op)
    _completer(comm).submit(handle, host, tensor, future)
    return future


def allreduce_hook(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """Average a DDP gradient bucket through the switch; return a future of the bucket.

    Register with ``ddp_model.register_comm_hook(comm, allreduce_hook)``, ``comm`` being a
    ``switchml.Communicator`` of the same rank and world size as the process group.
    """
    comm = state if isinstance(state, Communicator) else state.comm
    return _start(comm, bucket.buffer(), AVERAGE)


def _op_name(op: Any) -> str:
    if op == dist.ReduceOp.SUM:
        return SUM
    if hasattr(dist.ReduceOp, "AVG") and op == dist.ReduceOp.AVG:
        return AVERAGE
    raise NotImplementedError(f"switchml reduces with SUM and AVG only, not {op}")


def _work(future: torch.futures.Future) -> "dist.Work":
    # torch 1.13 exposes this only privately; later versions keep the same name.
    return torch._C._distributed_c10d._create_work_from_future(future)


def _done(tensors: List[torch.Tensor]) -> torch.futures.Future:
    future: torch.futures.Future = torch.futures.Future()
    future.set_result(tensors)
    return future


def _as_words(tensor: torch.Tensor) -> torch.Tensor:
    """Return a zeroed int32 host tensor large enough for ``tensor``'s bytes."""
    nbytes = tensor.numel() * tensor.element_size()
    return torch.zeros((nbytes + 3) // 4, dtype=torch.int32)


def _bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().contiguous().cpu().reshape(-1).view(torch.uint8)


class ProcessGroupSwitchML(dist.ProcessGroup):
    """A torch.distributed process group whose collectives go through the switch.

    Made by ``dist.init_process_group("switchml", ...)`` (``register_backend`` did the
    registration); its ``Communicator`` takes rank and world size from the group and the
    rest from the environment. Every collective blocks until done (the GIL released) and
    returns a finished ``Work``; ``allreduce_hook`` is the asynchronous path for DDP.
    """

    def __init__(self, store: Any, rank: int, size: int, timeout: timedelta,
                 comm: Communicator | None = None) -> None:
        super().__init__(rank, size)
        self.comm = comm if comm is not None else Communicator(rank=rank, world_size=size)

    def getBackendName(self) -> str:  # noqa: N802 - torch's name
        """Return "switchml"."""
        return "switchml"

    def allreduce(self, tensors: List[torch.Tensor], opts: Any = None) -> "dist.Work":
        """Sum (or average) each tensor across the ranks, in place."""
        op = _op_name(opts.reduceOp) if opts is not None else SUM
        for t in tensors:
            if t.device.type == "cpu" and t.is_contiguous():
                self.comm.allreduce(t, op)
            else:
                host = t.detach().contiguous().cpu()
                self.comm.allreduce(host, op)
                t.copy_(host)
        return _work(_done(tensors))

    def broadcast(self, tensors: List[torch.Tensor], opts: Any = None) -> "dist.Work":
        """Copy each tensor of rank ``opts.rootRank`` to every rank (exact, any dtype)."""
        root = opts.rootRank if opts is not None else 0
        for t in tensors:
            words = _as_words(t)
            nbytes = t.numel() * t.element_size()
            if self.rank() == root:
                words.view(torch.uint8)[:nbytes] = _bytes(t)
            self.comm.allreduce(words, SUM)
            if self.rank() != root:
                got = words.view(torch.uint8)[:nbytes].view(t.dtype).reshape(t.shape)
                t.copy_(got)
        return _work(_done(tensors))

    def allgather(self, output_tensors: List[List[torch.Tensor]],
                  input_tensors: List[torch.Tensor], opts: Any = None) -> "dist.Work":
        """Gather every rank's input into ``output_tensors`` (exact, any dtype)."""
        world, me = self.size(), self.rank()
        for outputs, t in zip(output_tensors, input_tensors):
            piece = _as_words(t).numel()
            nbytes = t.numel() * t.element_size()
            words = torch.zeros(piece * world, dtype=torch.int32)
            words[me * piece:(me + 1) * piece].view(torch.uint8)[:nbytes] = _bytes(t)
            self.comm.allreduce(words, SUM)
            for r, out in enumerate(outputs):
                chunk = words[r * piece:(r + 1) * piece].view(torch.uint8)[:nbytes]
                out.copy_(chunk.view(t.dtype).reshape(out.shape))
        return _work(_done([o for os in output_tensors for o in os]))

    def barrier(self, opts: Any = None) -> "dist.Work":
        """Return once every rank has called barrier."""
        self.comm.allreduce(np.zeros(1, dtype=np.int32))
        return _work(_done([]))


def _create(store: Any, rank: int, world_size: int, timeout: timedelta) -> ProcessGroupSwitchML:
    return ProcessGroupSwitchML(store, rank, world_size, timeout)


def register_backend() -> bool:
    """Register ``"switchml"`` with torch.distributed (done at import); return whether
    this call registered it (False: it already was)."""
    if "SWITCHML" in getattr(dist.Backend, "_plugins", {}):
        return False
    # torch 2.x asks which devices the backend serves (CUDA tensors go through host memory);
    # torch 1.13 has no such argument.
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
        dist.Backend.register_backend("switchml", _create, devices=["cpu", "cuda"])
    else:
        dist.Backend.register_backend("switchml", _create)
    return True


register_backend()
