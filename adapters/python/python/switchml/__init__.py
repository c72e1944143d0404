"""switchml: all-reduce through a switch (SwitchML-style in-network aggregation).

Workers quantize float tensors to int32 with a shared per-block exponent, a switch adds
them, and every worker gets the sum back. This package is the Python face of the Rust
library switchml-rs (its UDP adapter): a thin compiled module plus this pure-Python layer.

Public names:

- ``Communicator``: a worker's connection to a job at the switch. ``allreduce(tensor,
  op)`` reduces a NumPy array or a CPU torch tensor in place (float32, int32, float16,
  bfloat16), zero-copy, the GIL released; ``allreduce_async`` returns a ``Handle``.
  Settings come from keyword arguments, else the environment (``RANK``, ``WORLD_SIZE``,
  ``SWITCHML_SWITCH`` or ``MASTER_ADDR``, ``SWITCHML_JOB``, ``SWITCHML_JOB_KEY``, ...),
  else a TOML file, else the defaults.
- ``Handle``: an all-reduce in flight, with ``wait()`` and ``is_completed()``.
- ``Switch``: the software switch on a thread of this process (tests, one host); across
  hosts run ``switchml switch --job ID:WORLD``.
- ``fresh_key()``: a random job key for a switch and its workers to share.
- ``SETTINGS``: the names of every setting (``Communicator``'s keywords, the TOML file's
  keys; the environment's ``SWITCHML_<NAME>``).
- ``ReduceOp``: the reductions by name (``SUM``, ``AVG``, ``MAX``, ``MIN``, ``PRODUCT``,
  ``BAND``, ``BOR``, ``BXOR``); the switch runs ``SUM`` and ``AVG``, the torch backend the
  rest on the hosts. ``SUM`` and ``AVERAGE`` are ``ReduceOp.SUM`` and ``ReduceOp.AVG``.
- ``features()``: the optional behaviours this build has (a set of names).
- ``reset_logging()``: re-read the levels of Python's loggers. Rust log records go to
  Python's ``logging``, under loggers named after the Rust modules (``switchml_worker...``, ``switchml_ring...``).
- Exceptions, all ``SwitchMLError`` (a ``RuntimeError``) with the Rust error's words:
  ``ConfigError``, ``SwitchUnreachableError``, ``JoinTimeoutError`` (``ranks``: those
  that never joined), ``StreamError`` (a stalled slot, a switch that stopped or
  restarted), its subclass ``RankFailedError`` (``rank``: the rank that gave up or never
  contributed; ``ranks``: all of them), ``NonFiniteError`` (with ``non_finite="error"``), and ``UnsupportedError``
  (also a ``NotImplementedError``: an operation or type switchml does not do).
- ``switchml.torch`` (import it explicitly; importing it registers the ``"switchml"``
  torch.distributed backend, ``import switchml`` alone never imports torch): the
  ``DistributedDataParallel`` communication hook ``allreduce_hook`` and the backend.

Example, two ranks in one process::

    import threading, numpy as np, switchml
    with switchml.Switch(["1:2"]) as switch:
        def rank(r):
            with switchml.Communicator(rank=r, world_size=2, switch=switch.address,
                                       job=1) as comm:
                x = np.full(1000, 1.0 + r, dtype=np.float32)
                comm.allreduce(x)              # x is now 3.0 everywhere
        threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
        [t.start() for t in threads]; [t.join() for t in threads]
"""

from __future__ import annotations

import enum as _enum
import sys as _sys
from typing import Any, FrozenSet, Tuple

import numpy as _np

from . import _switchml
from ._switchml import (
    ConfigError,
    Handle,
    JoinTimeoutError,
    NonFiniteError,
    SETTINGS,
    RankFailedError,
    StreamError,
    Switch,
    SwitchMLError,
    SwitchUnreachableError,
    fresh_key,
    reset_logging,
)

__all__ = [
    "AVERAGE",
    "Communicator",
    "ConfigError",
    "Handle",
    "JoinTimeoutError",
    "NonFiniteError",
    "RankFailedError",
    "ReduceOp",
    "SETTINGS",
    "SUM",
    "StreamError",
    "Switch",
    "SwitchMLError",
    "SwitchUnreachableError",
    "UnsupportedError",
    "features",
    "fresh_key",
    "reset_logging",
]


class UnsupportedError(SwitchMLError, NotImplementedError):
    """An operation, reduction or element type switchml does not do; the message says
    what, and what does."""


class ReduceOp(str, _enum.Enum):
    """A reduction, by name (its value is the name ``Communicator.allreduce`` takes).

    ``SUM`` and ``AVG`` run in the switch (float32, int32, float16, bfloat16). ``MAX``,
    ``MIN``, ``PRODUCT`` and the bitwise ``BAND``, ``BOR``, ``BXOR`` are done by the torch
    backend on every host over an exact all-gather (see docs/pytorch.md for why).
    """

    SUM = "sum"
    AVG = "average"
    MAX = "max"
    MIN = "min"
    PRODUCT = "product"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __str__(self) -> str:
        return self.name


SUM = ReduceOp.SUM
"""The element-wise sum over the ranks (``ReduceOp.SUM``)."""
AVERAGE = ReduceOp.AVG
"""The element-wise sum divided by the number of ranks, float types (``ReduceOp.AVG``)."""


def features() -> FrozenSet[str]:
    """Return the names of the optional behaviours this build has, e.g.
    ``"byte_collectives"`` and ``"logging"``; code that needs one checks for it."""
    return frozenset(_switchml.features())


_NUMPY_DTYPES = {
    _np.dtype(_np.float32): "f32",
    _np.dtype(_np.int32): "i32",
    _np.dtype(_np.float16): "f16",
}


def _torch_dtypes() -> dict:
    torch = _sys.modules["torch"]
    return {
        torch.float32: "f32",
        torch.int32: "i32",
        torch.float16: "f16",
        torch.bfloat16: "bf16",
    }


def _as_buffer(tensor: Any, dtype: str | None) -> Tuple[Any, str]:
    """Return (an object exporting the tensor's memory, its switchml dtype name)."""
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(tensor, torch.Tensor):
        if tensor.device.type != "cpu":
            raise ValueError(
                f"the tensor is on {tensor.device}: switchml reduces host memory; copy it "
                "with .cpu() (switchml.torch.allreduce_hook does this for DDP buckets)"
            )
        if not tensor.is_contiguous():
            raise ValueError("the tensor is not contiguous: call .contiguous() first")
        kind = _torch_dtypes().get(tensor.dtype)
        if kind is None:
            raise TypeError(
                f"dtype {tensor.dtype}: switchml reduces float32, int32, float16 and bfloat16"
            )
        t = tensor.detach()
        if kind in ("f16", "bf16"):
            return t.view(torch.int16).numpy().view(_np.uint16), kind
        return t.numpy(), kind
    if isinstance(tensor, _np.ndarray):
        if dtype is not None:
            return (tensor.view(_np.uint16) if dtype in ("f16", "bf16") else tensor), dtype
        kind = _NUMPY_DTYPES.get(tensor.dtype)
        if kind is None:
            raise TypeError(
                f"dtype {tensor.dtype}: switchml reduces float32, int32 and float16 arrays "
                "(bfloat16: pass a uint16 array with dtype='bf16')"
            )
        if not tensor.flags.c_contiguous:
            raise ValueError("the array is not C-contiguous: use np.ascontiguousarray")
        return (tensor.view(_np.uint16) if kind == "f16" else tensor), kind
    if dtype is None:
        raise TypeError(
            f"{type(tensor).__name__}: pass a NumPy array or a torch tensor, or a buffer "
            "with dtype='f32'|'i32'|'f16'|'bf16'"
        )
    return tensor, dtype


def _switch_op(op: Any) -> str:
    """Return the name the switch takes for ``op`` (a ``ReduceOp`` or its value), or raise
    ``UnsupportedError`` for a reduction the switch does not do."""
    try:
        op = ReduceOp(op)
    except ValueError:
        raise ValueError(f"op {op!r}: expected a switchml.ReduceOp, e.g. SUM or AVG") from None
    if op not in (ReduceOp.SUM, ReduceOp.AVG):
        raise UnsupportedError(
            f"{op.name}: the switch only adds (SUM, AVG); the torch backend "
            "(switchml.torch) does the other reductions on the hosts"
        )
    return op.value


class Communicator(_switchml.Communicator):
    """A worker's connection to a job at the switch.

    Keywords (all optional): the settings of ``switchml.SETTINGS``, the one list the Rust
    library, the ``switchml`` command's flags, the environment and the TOML file share
    (rank, world_size, switch "host:port", job, key as an int or hex text, lanes, window,
    count, rto_ms, max_rto_ms, retries, timeout in seconds, join_timeout_ms, coalesce_us,
    fallback_addr, fallback_timeout_ms, dialect, non_finite ``"propagate"``/``"error"``,
    ...), each an int or a string; and config_file. One left out comes from the environment
    (``RANK``, ``WORLD_SIZE``, ``SWITCHML_SWITCH`` else ``MASTER_ADDR`` with
    ``SWITCHML_PORT``, ``SWITCHML_<NAME>``), else from the TOML file ``config_file`` or
    ``SWITCHML_CONFIG``, else from the defaults. An unknown keyword raises ``ConfigError``.

    The constructor returns once every rank has joined, or raises the error that says who
    did not. Every rank must reduce the same tensors (shapes, types) in the same order.
    Use it as a context manager, or call ``close()``.
    """

    def allreduce(self, tensor: Any, op: str = SUM, *, dtype: str | None = None) -> Any:
        """All-reduce ``tensor`` in place and return it.

        tensor: a C-contiguous, writable NumPy array (float32, int32, float16) or CPU
        torch tensor (float32, int32, float16, bfloat16); its own memory is reduced, no
        copy. op: ``ReduceOp.SUM`` or ``ReduceOp.AVG`` (or their values ``"sum"``,
        ``"average"``); any other raises ``UnsupportedError``. dtype: only for a raw buffer or a uint16
        array holding bfloat16 (``"bf16"``). The GIL is released while the switch works.
        A NaN or an infinity reaches every rank as Gloo's does: each rank gets NaN or ±inf
        over the same chunks (docs/protocol.md §5.4), so ``GradScaler`` skips the step on
        all of them. With ``non_finite="error"`` such a tensor raises ``NonFiniteError``
        instead and is left as it was.
        """
        buffer, kind = _as_buffer(tensor, dtype)
        self.allreduce_buffer(buffer, kind, _switch_op(op))
        return tensor

    def allreduce_async(self, tensor: Any, op: str = SUM, *, dtype: str | None = None) -> Handle:
        """Start an all-reduce of ``tensor``; return a ``Handle``.

        ``handle.wait()`` writes the result into ``tensor`` (or raises the error);
        ``handle.is_completed()`` polls. The data is copied when the call is made and
        written back at ``wait()``: leave ``tensor`` alone until then. Several may be in
        flight; every rank must start them in the same order. Arguments as ``allreduce``.
        """
        buffer, kind = _as_buffer(tensor, dtype)
        return self.allreduce_buffer_async(buffer, kind, _switch_op(op))
