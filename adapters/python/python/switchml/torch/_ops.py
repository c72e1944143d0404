"""The collectives, on tensors, over a transport (``_transport``).

Reductions the switch computes (SUM, AVG of float32, int32, float16, bfloat16) go
through it. Every other reduction (MAX, MIN, PRODUCT, the bitwise ones, and any reduction
of float64, int64, int16, int8, uint8, bool) is computed on each host from an exact
all-gather of every rank's bytes, rank 0's first: every rank computes the same result,
integers exactly, floats in the order of the ranks. It moves world-size times the data of
an all-reduce: fine for metrics and flags, not for gradients (keep those float32).

Tensors of any shape (0-dim, non-contiguous) and on any device are handled through a
contiguous CPU copy when they are not already one, and the result is copied back.
"""

from typing import Any, List, Optional

import torch as _torch

import switchml as _switchml

__all__: List[str] = []

_R = _switchml.ReduceOp


def host_bytes(t: _torch.Tensor) -> bytes:
    """The tensor's elements as bytes (C order), whatever its layout or device."""
    flat = t.detach().reshape(-1).contiguous().cpu()
    return flat.view(_torch.uint8).numpy().tobytes() if flat.numel() else b""


def from_bytes(data: bytes, dtype: _torch.dtype, shape: Any) -> _torch.Tensor:
    """A new CPU tensor of ``dtype`` and ``shape`` holding ``data``."""
    if len(data) == 0:
        return _torch.empty(shape, dtype=dtype)
    return _torch.frombuffer(bytearray(data), dtype=_torch.uint8).view(dtype).reshape(shape)


def _is_host(t: _torch.Tensor) -> bool:
    return t.device.type == "cpu" and t.is_contiguous() and t.dim() > 0


def _combine(acc: _torch.Tensor, other: _torch.Tensor, op: "_switchml.ReduceOp") -> None:
    """acc = acc (op) other, in acc's dtype (integers wrap, bools are logical)."""
    if op in (_R.SUM, _R.AVG):
        acc.add_(other) if acc.dtype != _torch.bool else acc.logical_or_(other)
    elif op == _R.PRODUCT:
        acc.mul_(other) if acc.dtype != _torch.bool else acc.logical_and_(other)
    elif op == _R.MAX:
        _torch.maximum(acc, other, out=acc)
    elif op == _R.MIN:
        _torch.minimum(acc, other, out=acc)
    elif op == _R.BAND:
        acc.bitwise_and_(other)
    elif op == _R.BOR:
        acc.bitwise_or_(other)
    elif op == _R.BXOR:
        acc.bitwise_xor_(other)


def _check(t: _torch.Tensor, op: "_switchml.ReduceOp") -> None:
    floating = t.is_floating_point() or t.is_complex()
    if op == _R.AVG and not floating:
        raise _switchml.UnsupportedError(f"AVG of {t.dtype}: average float tensors only")
    if op in (_R.BAND, _R.BOR, _R.BXOR) and floating:
        raise _switchml.UnsupportedError(f"{op.name} of {t.dtype}: bitwise ops take integers")


def reduced(transport: Any, t: _torch.Tensor, op: "_switchml.ReduceOp") -> _torch.Tensor:
    """Return the reduction of ``t`` over the ranks (a tensor of t's shape and dtype), which
    may be ``t`` itself, reduced in place."""
    _check(t, op)
    if hasattr(transport, "can_reduce") and transport.can_reduce(t.dtype, op):
        host = t if _is_host(t) else t.detach().reshape(-1).contiguous().cpu()
        transport.reduce(host, op)
        return host if host is t else host.reshape(t.shape)
    parts = transport.allgather_bytes(host_bytes(t))
    transport.counters["host_reduced"] += 1
    acc = from_bytes(parts[0], t.dtype, t.shape).clone()
    for p in parts[1:]:
        _combine(acc, from_bytes(p, t.dtype, t.shape), op)
    if op == _R.AVG:
        acc.div_(len(parts))
    return acc


def _write(target: _torch.Tensor, value: _torch.Tensor) -> None:
    if value is not target:
        target.copy_(value.reshape(target.shape))


def allreduce(transport: Any, t: _torch.Tensor, op: "_switchml.ReduceOp") -> None:
    _write(t, reduced(transport, t, op))


def broadcast(transport: Any, t: _torch.Tensor, root: int) -> None:
    mine = host_bytes(t) if transport.rank == root else b""
    data = transport.broadcast_bytes(mine, root)
    if transport.rank != root:
        _write(t, from_bytes(data, t.dtype, t.shape))


def allgather(transport: Any, outputs: List[_torch.Tensor], t: _torch.Tensor) -> None:
    for out, data in zip(outputs, transport.allgather_bytes(host_bytes(t))):
        _write(out, from_bytes(data, out.dtype, out.shape))


def gather(transport: Any, outputs: Optional[List[_torch.Tensor]], t: _torch.Tensor,
           root: int) -> None:
    parts = transport.allgather_bytes(host_bytes(t))
    if transport.rank == root:
        for out, data in zip(outputs or [], parts):
            _write(out, from_bytes(data, out.dtype, out.shape))


def scatter(transport: Any, out: _torch.Tensor, inputs: Optional[List[_torch.Tensor]],
            root: int) -> None:
    mine = b"".join(host_bytes(i) for i in inputs) if transport.rank == root else b""
    data = transport.broadcast_bytes(mine, root)
    size = out.numel() * out.element_size()
    piece = data[transport.rank * size:(transport.rank + 1) * size]
    _write(out, from_bytes(piece, out.dtype, out.shape))


def reduce_scatter(transport: Any, out: _torch.Tensor, inputs: List[_torch.Tensor],
                   op: "_switchml.ReduceOp") -> None:
    whole = _torch.cat([i.detach().reshape(-1).cpu() for i in inputs])
    total = reduced(transport, whole, op)
    n = out.numel()
    _write(out, total[transport.rank * n:(transport.rank + 1) * n])


def alltoall(transport: Any, outputs: List[_torch.Tensor], inputs: List[_torch.Tensor]) -> None:
    """Rank r's inputs[s] becomes rank s's outputs[r]; pieces may differ in size."""
    sizes = _torch.tensor([i.numel() * i.element_size() for i in inputs], dtype=_torch.int64)
    all_sizes = [from_bytes(b, _torch.int64, (-1,)).tolist()
                 for b in transport.allgather_bytes(host_bytes(sizes))]
    parts = transport.allgather_bytes(b"".join(host_bytes(i) for i in inputs))
    me = transport.rank
    for src, (out, data) in enumerate(zip(outputs, parts)):
        start = sum(all_sizes[src][:me])
        piece = data[start:start + all_sizes[src][me]]
        _write(out, from_bytes(piece, out.dtype, out.shape))


def alltoall_single(transport: Any, out: _torch.Tensor, t: _torch.Tensor,
                    out_splits: List[int], in_splits: List[int]) -> None:
    """``all_to_all_single``: split ``t`` along dim 0 (evenly, or by ``in_splits``)."""
    world = transport.size
    in_splits = list(in_splits) or [t.shape[0] // world] * world
    out_splits = list(out_splits) or [out.shape[0] // world] * world
    pieces = list(_torch.split(t.detach().cpu(), in_splits)) if t.dim() else [t]
    received = [out.new_empty((n,) + tuple(out.shape[1:]), device="cpu") for n in out_splits]
    alltoall(transport, received, pieces)
    _write(out, _torch.cat(received) if received else out)
