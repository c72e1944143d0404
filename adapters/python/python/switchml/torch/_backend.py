"""``ProcessGroupSwitchML``: the ``"switchml"`` torch.distributed backend.

Every collective is queued on the group's thread (``_work``) and returns a ``dist.Work``
at once; ``_ops`` does the work over the group's transport (``_transport``): the switch
for the default group, torch's store for subgroups and point-to-point.
"""

import weakref as _weakref
from datetime import timedelta as _timedelta
from typing import Any, Callable, List, Optional

import torch as _torch
import torch.distributed as _dist

import switchml as _switchml

from . import _launch, _ops
from ._hook import _Copied
from ._transport import _StoreTransport, _SwitchTransport, stats as _stats
from ._work import _Executor, _Work

__all__ = ["ProcessGroupSwitchML"]

_R = _switchml.ReduceOp

# The base class: dist.ProcessGroup, whose pybind11 trampoline forwards each collective to
# Python, in 1.13 and in 2.x (2.x wraps per-device C++ Backend objects in a ProcessGroup,
# but a Python ProcessGroup subclass is still accepted from a backend's creator: the
# package's DDP test passed so on torch 2.11). `dist.Backend` in Python is the registry of
# backend names, not a base class.
_Base = _dist.ProcessGroup


def reduce_op(op: Any) -> "_switchml.ReduceOp":
    """The ``switchml.ReduceOp`` of a ``torch.distributed.ReduceOp`` (named, not its repr)."""
    if isinstance(op, _switchml.ReduceOp):
        return op
    for r in _R:
        if hasattr(_dist.ReduceOp, r.name) and op == getattr(_dist.ReduceOp, r.name):
            return r
    raise _switchml.UnsupportedError(
        f"reduction {getattr(op, 'name', None) or op}: switchml does SUM, AVG, MAX, MIN, "
        "PRODUCT, BAND, BOR, BXOR (not PREMUL_SUM)")


def _op_of(opts: Any) -> "_switchml.ReduceOp":
    return reduce_op(opts.reduceOp) if opts is not None else _R.SUM


def _root_of(opts: Any) -> int:
    return opts.rootRank if opts is not None else 0


class ProcessGroupSwitchML(_Base):
    """A torch.distributed process group whose collectives go through the switch.

    Made by ``dist.init_process_group("switchml", ...)`` (the default group: a switchml
    job, with an embedded switch on rank 0 unless ``SWITCHML_SWITCH`` names one) and by
    ``dist.new_group(...)`` (a subgroup: over torch's store). Every collective returns a
    ``Work`` at once and runs on the group's thread, in call order. ``stats()`` counts
    what went where; ``comm`` is the default group's ``switchml.Communicator`` (None for a
    subgroup).
    """

    def __init__(self, store: Any, rank: int, size: int, timeout: _timedelta,
                 comm: Optional["_switchml.Communicator"] = None,
                 subgroup: bool = False) -> None:
        super().__init__(rank, size)
        self._closer: Any = lambda: None
        if subgroup:
            self.comm = None
            self._transport: _StoreTransport = _StoreTransport(store, rank, size)
        else:
            if comm is None:
                comm, switch = _launch.connect(store, rank, size, timeout)
                # What this group started ends with it (destroy_process_group drops it):
                # the job left first, then the embedded switch stopped.
                self._closer = _weakref.finalize(self, _shut, comm, switch)
            self.comm = comm
            self._transport = _SwitchTransport(store, rank, size, comm)
        self._executor = _Executor(f"switchml-pg{rank}")

    def getBackendName(self) -> str:  # noqa: N802 - torch's name
        """Return "switchml"."""
        return "switchml"

    def stats(self) -> dict:
        """Return the communicator's counters (``Communicator.stats()``) and where this
        group's collectives went: switch_allreduce (tensors reduced in the switch),
        switch_byte_collectives (exact broadcasts and all-gathers through the switch),
        host_reduced (reductions computed on the hosts over such an all-gather),
        store_collectives, store_p2p and store_bytes (over torch's store)."""
        return _stats(self._transport, self.comm)

    def _queue(self, body: Callable[[], Any], result: List[_torch.Tensor]) -> _Work:
        return self._executor.submit(body, result)

    def _submit_allreduce(self, host: _torch.Tensor, target: _torch.Tensor, op: Any,
                          raw: _torch.futures.Future, outcome: Any) -> None:
        """The DDP hook's entry: an asynchronous all-reduce in the group's order."""
        op = _switchml.ReduceOp(op)
        work = self._queue(lambda: _Copied(self._transport.reduce_async(host, op), host,
                                           target), [target])

        def done(future: _torch.futures.Future) -> None:
            value = future.value()
            outcome.error = value if isinstance(value, BaseException) else None
            raw.set_result(value if outcome.error is not None else target)  # before the event
            outcome.done.set()

        work._raw.then(done)

    def allreduce(self, tensors: List[_torch.Tensor], opts: Any = None) -> "_dist.Work":
        """Reduce each tensor across the ranks, in place (SUM, AVG in the switch)."""
        op = _op_of(opts)
        return self._queue(lambda: [_ops.allreduce(self._transport, t, op) for t in tensors],
                           tensors)

    def allreduce_coalesced(self, tensors: List[_torch.Tensor],
                            opts: Any = None) -> "_dist.Work":
        """As ``allreduce``, tensor by tensor."""
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors: List[_torch.Tensor], opts: Any = None) -> "_dist.Work":
        """Copy each tensor of rank ``opts.rootRank`` to every rank (exact, any dtype)."""
        root = _root_of(opts)
        return self._queue(lambda: [_ops.broadcast(self._transport, t, root) for t in tensors],
                           tensors)

    def allgather(self, output_tensors: List[List[_torch.Tensor]],
                  input_tensors: List[_torch.Tensor], opts: Any = None) -> "_dist.Work":
        """Gather every rank's input into ``output_tensors`` (exact, any dtype)."""
        def body() -> None:
            for outputs, t in zip(output_tensors, input_tensors):
                _ops.allgather(self._transport, outputs, t)
        return self._queue(body, [o for os in output_tensors for o in os])

    def _allgather_base(self, output: _torch.Tensor, input: _torch.Tensor,
                        opts: Any = None) -> "_dist.Work":
        """``all_gather_into_tensor``: the ranks' inputs, concatenated into ``output``."""
        chunks = list(output.view(-1).chunk(self.size())) if output.is_contiguous() else None
        def body() -> None:
            if chunks is not None:
                _ops.allgather(self._transport, chunks, input)
            else:
                flat = output.new_empty(output.numel())
                _ops.allgather(self._transport, list(flat.chunk(self.size())), input)
                output.copy_(flat.view(output.shape))
        return self._queue(body, [output])

    def allgather_coalesced(self, output_lists: List[List[_torch.Tensor]],
                            input_list: List[_torch.Tensor], opts: Any = None) -> "_dist.Work":
        """``all_gather_coalesced``: as ``allgather``, for a list of tensors."""
        def body() -> None:
            for k, t in enumerate(input_list):
                _ops.allgather(self._transport, [outs[k] for outs in output_lists], t)
        return self._queue(body, [o for os in output_lists for o in os])

    def allgather_into_tensor_coalesced(self, outputs: List[_torch.Tensor],
                                        inputs: List[_torch.Tensor],
                                        opts: Any = None) -> "_dist.Work":
        """torch 2.x's coalesced ``all_gather_into_tensor`` (untested: 1.13 has none)."""
        def body() -> None:
            for out, t in zip(outputs, inputs):
                flat = out.new_empty(out.numel())
                _ops.allgather(self._transport, list(flat.chunk(self.size())), t)
                out.copy_(flat.view(out.shape))
        return self._queue(body, outputs)

    def reduce_scatter_tensor_coalesced(self, outputs: List[_torch.Tensor],
                                        inputs: List[_torch.Tensor],
                                        opts: Any = None) -> "_dist.Work":
        """torch 2.x's coalesced ``reduce_scatter_tensor`` (untested: 1.13 has none)."""
        op = _op_of(opts)
        def body() -> None:
            for out, t in zip(outputs, inputs):
                _ops.reduce_scatter(self._transport, out,
                                    list(t.reshape(-1).chunk(self.size())), op)
        return self._queue(body, outputs)

    def reduce(self, tensors: List[_torch.Tensor], opts: Any = None) -> "_dist.Work":
        """Reduce each tensor onto rank ``opts.rootRank`` (the others' are left as they were)."""
        op, root = _op_of(opts), _root_of(opts)
        def body() -> None:
            for t in tensors:
                value = _ops.reduced(self._transport, t.clone() if self.rank() != root else t, op)
                if self.rank() == root and value is not t:
                    t.copy_(value.reshape(t.shape))
        return self._queue(body, tensors)

    def gather(self, output_tensors: List[List[_torch.Tensor]],
               input_tensors: List[_torch.Tensor], opts: Any = None) -> "_dist.Work":
        """Gather every rank's input on rank ``opts.rootRank``."""
        root = _root_of(opts)
        outputs = output_tensors[0] if output_tensors else None
        return self._queue(lambda: _ops.gather(self._transport, outputs, input_tensors[0], root),
                           list(outputs or []))

    def scatter(self, output_tensors: List[_torch.Tensor],
                input_tensors: List[List[_torch.Tensor]], opts: Any = None) -> "_dist.Work":
        """Send piece r of rank ``opts.rootRank``'s inputs to rank r."""
        root = _root_of(opts)
        inputs = input_tensors[0] if input_tensors else None
        return self._queue(lambda: _ops.scatter(self._transport, output_tensors[0], inputs, root),
                           output_tensors)

    def reduce_scatter(self, output_tensors: List[_torch.Tensor],
                       input_tensors: List[List[_torch.Tensor]],
                       opts: Any = None) -> "_dist.Work":
        """Reduce the ranks' input lists; rank r gets the reduction of piece r."""
        op = _op_of(opts)
        def body() -> None:
            for out, inputs in zip(output_tensors, input_tensors):
                _ops.reduce_scatter(self._transport, out, inputs, op)
        return self._queue(body, output_tensors)

    def _reduce_scatter_base(self, output: _torch.Tensor, input: _torch.Tensor,
                             opts: Any = None) -> "_dist.Work":
        """``reduce_scatter_tensor``: ``input`` holds every rank's piece, concatenated."""
        op = _op_of(opts)
        pieces = list(input.reshape(-1).chunk(self.size()))
        return self._queue(lambda: _ops.reduce_scatter(self._transport, output, pieces, op),
                           [output])

    def alltoall(self, output_tensors: List[_torch.Tensor],
                 input_tensors: List[_torch.Tensor], opts: Any = None) -> "_dist.Work":
        """Rank r's ``input_tensors[s]`` lands in rank s's ``output_tensors[r]``."""
        return self._queue(lambda: _ops.alltoall(self._transport, output_tensors,
                                                 input_tensors), output_tensors)

    def alltoall_base(self, output: _torch.Tensor, input: _torch.Tensor,
                      output_split_sizes: List[int], input_split_sizes: List[int],
                      opts: Any = None) -> "_dist.Work":
        """``all_to_all_single``, even or uneven splits along dimension 0."""
        return self._queue(lambda: _ops.alltoall_single(
            self._transport, output, input, output_split_sizes, input_split_sizes), [output])

    def barrier(self, opts: Any = None) -> "_dist.Work":
        """Return once every rank has called barrier."""
        return self._queue(lambda: self._transport.allgather_bytes(b""), [])

    def send(self, tensors: List[_torch.Tensor], dstRank: int, tag: int) -> "_dist.Work":  # noqa: N803
        """Send the tensors to rank ``dstRank`` (over torch's store)."""
        data = b"".join(_ops.host_bytes(t) for t in tensors)
        return self._queue(lambda: self._transport.send_bytes(data, dstRank, tag), tensors)

    def recv(self, tensors: List[_torch.Tensor], srcRank: int, tag: int) -> "_dist.Work":  # noqa: N803
        """Receive the tensors from rank ``srcRank`` (over torch's store)."""
        def body() -> None:
            data, at = self._transport.recv_bytes(srcRank, tag), 0
            for t in tensors:
                n = t.numel() * t.element_size()
                t.copy_(_ops.from_bytes(data[at:at + n], t.dtype, t.shape))
                at += n
        return self._queue(body, tensors)

    def recv_anysource(self, tensors: List[_torch.Tensor], tag: int) -> "_dist.Work":
        """Not supported: name the source rank."""
        raise _switchml.UnsupportedError("recv from any source: switchml needs the source rank")

    def close(self) -> None:
        """Leave the job and stop the embedded switch, if this group started them (done
        when the group is destroyed and dropped)."""
        self._closer()


def _shut(comm: "_switchml.Communicator", switch: Optional["_switchml.Switch"]) -> None:
    comm.close()
    if switch is not None:
        switch.stop()
