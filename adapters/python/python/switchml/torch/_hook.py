"""The DDP communication hook: each gradient bucket averaged through the switch.

Errors: a bucket whose all-reduce fails raises the switchml exception itself
(``RankFailedError``, ``StreamError``, ...) from ``loss.backward()``, where ``except``
catches it, and the process lives on. torch (1.13 and 2.x) can only fail a hook's future
with a ``RuntimeError`` quoting the exception, and setting an exception object as its
value made DDP abort the process ("Unable to cast ... to Tensor", then ``terminate``);
so the hook also queues an autograd final callback that waits for the bucket and raises
the typed exception, which the autograd engine hands to ``backward()`` unchanged.
"""

import queue as _queue
import threading as _threading
import weakref as _weakref
from typing import Any, List, Optional

import torch as _torch
import torch.distributed as _dist
from torch.autograd import Variable as _Variable

import switchml as _switchml

from ._work import _unwrap

__all__: List[str] = []


class _Outcome:
    """How one bucket's all-reduce ended, for the final callback."""

    def __init__(self) -> None:
        self.done = _threading.Event()
        self.error: Optional[BaseException] = None

    def raise_error(self) -> None:
        self.done.wait()
        if self.error is not None:
            raise self.error


class _Copied:
    """A handle whose wait() also copies the host result back into the bucket."""

    def __init__(self, handle: Any, host: _torch.Tensor, target: _torch.Tensor) -> None:
        self.handle, self.host, self.target = handle, host, target

    def wait(self) -> None:
        self.handle.wait()
        if self.target is not self.host:
            self.target.copy_(self.host)


class _Completer:
    """One thread per communicator that waits on handles in submission order and
    completes their futures (waiting releases the GIL)."""

    def __init__(self) -> None:
        self._queue: _queue.SimpleQueue = _queue.SimpleQueue()
        _threading.Thread(target=self._run, name="switchml-completer", daemon=True).start()

    def submit(self, handle: Any, raw: _torch.futures.Future, outcome: _Outcome) -> None:
        self._queue.put((handle, raw, outcome))

    def _run(self) -> None:
        while True:
            handle, raw, outcome = self._queue.get()
            try:
                handle.wait()
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits
                outcome.error = e
            # The future before the event, as in _work._Work._finish.
            raw.set_result(outcome.error if outcome.error is not None else handle.target)
            outcome.done.set()


_completers: "_weakref.WeakKeyDictionary[Any, _Completer]" = _weakref.WeakKeyDictionary()
_completers_lock = _threading.Lock()


def _completer(comm: Any) -> _Completer:
    with _completers_lock:
        c = _completers.get(comm)
        if c is None:
            c = _completers[comm] = _Completer()
        return c


def _default_group_backend() -> Any:
    """The "switchml" backend object of the default process group, if it is one."""
    if not _dist.is_initialized():
        return None
    group = _dist.distributed_c10d._get_default_group()
    if hasattr(group, "comm"):
        return group
    try:  # torch 2.x: the group wraps one backend object per device type
        backend = group._get_backend(_torch.device("cpu"))
    except (AttributeError, RuntimeError):
        return None
    return backend if hasattr(backend, "comm") else None


def _owner(state: Any) -> Any:
    """The object whose communicator the hook uses: a Communicator, a process group of
    this package (its own communicator, through its collective thread), an object with a
    ``comm`` attribute, or None: the default process group if it is "switchml"."""
    if state is None:
        state = _default_group_backend()
        if state is None:
            raise _switchml.ConfigError(
                "allreduce_hook with state None needs the default process group to be "
                '"switchml" (dist.init_process_group("switchml")); otherwise pass a '
                "switchml.Communicator as the state")
    return state


def start(state: Any, tensor: _torch.Tensor, op: Any) -> _torch.futures.Future:
    """Start an all-reduce of ``tensor`` (any device) and return a future of it."""
    owner = _owner(state)
    host = tensor if tensor.device.type == "cpu" else tensor.to("cpu")
    raw: _torch.futures.Future = _torch.futures.Future()
    future = raw.then(_unwrap)
    outcome = _Outcome()
    if getattr(owner, "comm", True) is None:
        raise _switchml.UnsupportedError(
            "allreduce_hook on a subgroup: only the default \"switchml\" group has a "
            "switch job; pass None (the default group) or a switchml.Communicator")
    if hasattr(owner, "_submit_allreduce"):
        # The backend's own communicator: through its collective thread, so the bucket
        # keeps its place among the group's other collectives on every rank.
        owner._submit_allreduce(host, tensor, op, raw, outcome)
    else:
        comm = owner if isinstance(owner, _switchml.Communicator) else owner.comm
        handle = comm.allreduce_async(host, op)
        _completer(comm).submit(_Copied(handle, host, tensor), raw, outcome)
    try:
        _Variable._execution_engine.queue_callback(outcome.raise_error)
    except RuntimeError:
        pass  # not inside a backward pass (a direct call): the future carries the error
    return future
