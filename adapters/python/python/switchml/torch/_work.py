"""Asynchronous collectives: a ``dist.Work`` that a thread of the process group finishes.

Each process group runs its collectives on one thread of its own, in the order they were
called (every rank calls them in the same order, so every rank's switch traffic lines up),
while the caller goes on: ``dist.all_reduce(t, async_op=True)`` returns at once and the
reduction overlaps whatever the caller does next (the thread waits with the GIL released).
An all-reduce started through a ``Communicator``'s asynchronous path (the DDP hook) is
handed on to a second thread that waits for it, so several can be in flight.

``_Work.wait()`` raises the collective's own exception (a ``switchml.SwitchMLError``),
which ``except`` catches. Its ``get_future()`` is what C++ callers (DDP) chain on; there
torch can only carry a failure as a ``RuntimeError`` that quotes the exception.
"""

import collections as _collections
import queue as _queue
import threading as _threading
from datetime import timedelta as _timedelta
from typing import Any, Callable, List, Optional

import torch as _torch
import torch.distributed as _dist

__all__: List[str] = []

# Finished works kept referenced for a while: C++ may still hold one of them and call its
# Python overrides (get_future, wait) through pybind11's trampoline, which needs the
# Python object alive.
_KEPT = 256


def _unwrap(future: _torch.futures.Future) -> Any:
    value = future.value()
    if isinstance(value, BaseException):
        raise value
    return value


class _Work(_dist.Work):
    """One collective in flight; finished by the group's thread."""

    def __init__(self, result: List[_torch.Tensor]) -> None:
        super().__init__()
        self._result = result
        self._error: Optional[BaseException] = None
        self._done = _threading.Event()
        self._raw: _torch.futures.Future = _torch.futures.Future()
        # Completing _raw with a value or an exception object runs _unwrap: a failure
        # becomes the chained future's error instead of a value C++ cannot cast.
        self._future = self._raw.then(_unwrap)

    def _finish(self, error: Optional[BaseException] = None) -> None:
        self._error = error
        # The future first: its callbacks run in set_result, inside torch's C++ with the
        # GIL released. Were wait() to return first, the caller could reach interpreter
        # exit while this thread is still in there; taking the GIL back then kills the
        # thread through C++ frames, which aborts the process.
        self._raw.set_result(error if error is not None else self._result)
        self._done.set()

    def wait(self, timeout: Any = None) -> bool:
        """Wait for the collective; raise its exception if it failed."""
        seconds = timeout.total_seconds() if isinstance(timeout, _timedelta) else None
        if seconds is not None and seconds > 0 and not self._done.wait(seconds):
            raise TimeoutError(f"the collective did not finish within {timeout}")
        self._done.wait()
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self) -> bool:
        """Return whether the collective has finished, successfully or not."""
        return self._done.is_set()

    def is_success(self) -> bool:
        """Return whether it finished without an error."""
        return self._done.is_set() and self._error is None

    def exception(self) -> Optional[BaseException]:
        """Return the error it finished with, or None."""
        return self._error

    def result(self) -> List[_torch.Tensor]:
        """Return the output tensors."""
        return self._result

    def get_future(self) -> _torch.futures.Future:
        """Return a future of the output tensors (failed with a RuntimeError quoting the
        switchml exception if the collective failed)."""
        return self._future

    def synchronize(self) -> None:
        """Nothing to do: results are in host memory when the work finishes."""


class _Executor:
    """The process group's collective thread, and the waiter for asynchronous handles."""

    def __init__(self, name: str) -> None:
        self._jobs: _queue.SimpleQueue = _queue.SimpleQueue()
        self._handles: _queue.SimpleQueue = _queue.SimpleQueue()
        self._kept: _collections.deque = _collections.deque(maxlen=_KEPT)
        for target, suffix in ((self._run, ""), (self._wait_handles, "-wait")):
            _threading.Thread(target=target, name=name + suffix, daemon=True).start()

    def submit(self, body: Callable[[], Any], result: List[_torch.Tensor]) -> _Work:
        """Run ``body`` on the group's thread after everything submitted before it; return
        the work it finishes. If ``body`` returns a handle (an object with ``wait()``),
        the work finishes once that handle's wait returns, and the thread moves on."""
        work = _Work(result)
        self._jobs.put((body, work))
        return work

    def _run(self) -> None:
        while True:
            body, work = self._jobs.get()
            self._kept.append(work)
            try:
                handle = body()
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits
                work._finish(e)
                continue
            if handle is not None and hasattr(handle, "wait"):
                self._handles.put((handle, work))
            else:
                work._finish()
            # Drop the references before blocking on the queue again: the last body
            # would otherwise keep its process group (and its job) alive after
            # destroy_process_group.
            body = work = handle = None

    def _wait_handles(self) -> None:
        while True:
            handle, work = self._handles.get()
            try:
                handle.wait()
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits
                work._finish(e)
            else:
                work._finish()
            handle = work = None
