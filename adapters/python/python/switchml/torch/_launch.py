"""Joining a job the way Gloo does: nothing started by hand.

With ``SWITCHML_SWITCH`` set, every rank joins that switch (a ``switchml switch``
daemon, across hosts). Without it, rank 0 starts an embedded switch (``switchml.Switch``)
listening on every interface (``SWITCHML_PORT`` picks the port, else a free one), with one
job for the group's ranks and a fresh key, and publishes ``MASTER_ADDR`` (the name the
other ranks already reach rank 0 by, for the store) with that port, the job and the key
through torch's rendezvous store; the other ranks read them there. Rank 0 does not
resolve the name itself: on Debian a host's own name resolves to 127.0.1.1 there, which
no other host reaches. The job is keyed, so binding every interface admits no stranger. Either way a rank that finds nothing listening yet retries until the process
group's ``timeout`` (``init_process_group(timeout=...)``, torch's default 30 minutes),
which is also the join timeout: every rank waits that long for the others, as Gloo does.
"""

import logging as _logging
import os as _os
import time as _time
from datetime import timedelta as _timedelta
from typing import Any, List, Optional, Tuple

import switchml as _switchml

__all__: List[str] = []

_log = _logging.getLogger("switchml.torch")

_KEY = "switchml/switch"
# Slots of the embedded switch's job: what `switchml switch --job ID:WORLD` gives.
_SLOTS = 256
# Pause between tries while nothing listens at the switch's address yet.
_RETRY_S = 0.5


def _master_host() -> str:
    host = _os.environ.get("MASTER_ADDR")
    if not host:
        _log.warning("MASTER_ADDR is not set: the ranks are told to reach the embedded "
                     "switch at 127.0.0.1, which only ranks on this host can")
        return "127.0.0.1"
    return host


def _start_switch(store: Any, size: int) -> Tuple["_switchml.Switch", str, int, int]:
    job = int(_os.environ.get("SWITCHML_JOB", "1"))
    key = _switchml.fresh_key()
    port = int(_os.environ.get("SWITCHML_PORT", "0"))
    switch = _switchml.Switch([(job, size, _SLOTS, key)], bind=f"0.0.0.0:{port}")
    address = f"{_master_host()}:{switch.port}"
    store.set(_KEY, f"{address} {job} {key:x}")
    _log.info("rank 0 started an embedded switch at %s for job %d (%d ranks)",
              address, job, size)
    return switch, address, job, key


def _published(store: Any) -> Tuple[str, int, int]:
    address, job, key = store.get(_KEY).decode().split()
    return address, int(job), int(key, 16)


def connect(store: Any, rank: int, size: int,
            timeout: _timedelta) -> Tuple["_switchml.Communicator", Optional["_switchml.Switch"]]:
    """Join the group's job; return the communicator and, on rank 0 when it started one,
    the embedded switch (which must live as long as the group)."""
    deadline = _time.monotonic() + timeout.total_seconds()
    join_ms = max(1, int(timeout.total_seconds() * 1000))
    switch = None
    if _os.environ.get("SWITCHML_SWITCH"):
        settings = {}
    else:
        if rank == 0:
            switch, address, job, key = _start_switch(store, size)
        else:
            address, job, key = _published(store)
        settings = {"switch": address, "job": job, "key": key}
    while True:
        try:
            # The group's timeout bounds both the join and the wait for a busy peer
            # (a dead one the switch names within about 2 s), as Gloo's does.
            comm = _switchml.Communicator(rank=rank, world_size=size, join_timeout_ms=join_ms,
                                          timeout=max(1, int(timeout.total_seconds())),
                                          **settings)
            return comm, switch
        except _switchml.SwitchUnreachableError:
            if _time.monotonic() + _RETRY_S >= deadline:
                if switch is not None:
                    switch.stop()
                raise
            _log.info("rank %d: nothing listens at the switch yet; retrying", rank)
            _time.sleep(_RETRY_S)
