"""PyTorch integration: a DDP communication hook and a ``"switchml"`` backend.

Importing this module registers the ``"switchml"`` torch.distributed backend (``import
switchml`` alone does not import torch nor register anything); ``register_backend()``
does it explicitly and says whether it did.

- ``allreduce_hook(state, bucket)``: for ``DistributedDataParallel.register_comm_hook``.
  It averages each gradient bucket through the switch and returns a
  ``torch.futures.Future`` completed by a background thread, so the all-reduce overlaps
  the rest of the backward pass. ``state``: ``None`` (the default process group's own
  communicator, when that group is ``"switchml"``), a ``switchml.Communicator``, a
  ``ProcessGroupSwitchML``, or anything with a ``comm`` attribute holding a Communicator.
  A failed bucket raises its switchml exception from ``backward()``. CUDA buckets are
  copied to host memory and back.
- ``ProcessGroupSwitchML``: the backend ``dist.init_process_group("switchml")`` makes:
  all_reduce (SUM and AVG in the switch; MAX, MIN, PRODUCT, BAND, BOR, BXOR on the hosts),
  broadcast, all_gather (and ``all_gather_into_tensor``), reduce, gather, scatter,
  reduce_scatter (and ``reduce_scatter_tensor``), all_to_all (and ``all_to_all_single``),
  barrier, send/recv; every dtype; asynchronous ``Work``. With no ``SWITCHML_SWITCH``,
  rank 0 starts an embedded switch and the other ranks find it through torch's store.
  docs/pytorch.md has the full table against Gloo.
"""

import inspect as _inspect
from datetime import timedelta as _timedelta
from typing import Any

import torch as _torch
import torch.distributed as _dist

import switchml as _switchml

from ._backend import ProcessGroupSwitchML, reduce_op
from ._hook import start as _hook_start

__all__ = ["ProcessGroupSwitchML", "allreduce_hook", "reduce_op", "register_backend"]


def allreduce_hook(state: Any, bucket: _dist.GradBucket) -> _torch.futures.Future[_torch.Tensor]:
    """Average a DDP gradient bucket through the switch; return a future of the bucket.

    Register with ``ddp_model.register_comm_hook(state, allreduce_hook)``: ``state`` None
    uses the "switchml" default process group's communicator; else a
    ``switchml.Communicator`` of the same rank and world size as the process group.
    """
    return _hook_start(state, bucket.buffer(), _switchml.AVERAGE)


def _start(comm: Any, tensor: _torch.Tensor, op: Any) -> _torch.futures.Future:
    """Start an all-reduce of ``tensor`` (any device) on ``comm``; return a future of it."""
    return _hook_start(comm, tensor, op)


def _create(store: Any, rank: int, world_size: int, timeout: _timedelta) -> ProcessGroupSwitchML:
    # init_process_group makes the default group before it counts as initialized; any
    # later group is a subgroup (dist.new_group), which a switch job cannot serve.
    return ProcessGroupSwitchML(store, rank, world_size, timeout,
                                subgroup=_dist.is_initialized())


def register_backend() -> bool:
    """Register ``"switchml"`` with torch.distributed (importing this module does); return
    whether this call registered it (False: it already was)."""
    if "SWITCHML" in getattr(_dist.Backend, "_plugins", {}):
        return False
    # torch 2.x asks which devices the backend serves (CUDA tensors go through host memory)
    # and whether the creator takes the extended arguments (it does not: store, rank,
    # size, timeout, as in 1.13); torch 1.13 has neither argument.
    parameters = _inspect.signature(_dist.Backend.register_backend).parameters
    extra = {}
    if "devices" in parameters:
        extra["devices"] = ["cpu", "cuda"]
    if "extended_api" in parameters:
        extra["extended_api"] = False
    _dist.Backend.register_backend("switchml", _create, **extra)
    return True


register_backend()
