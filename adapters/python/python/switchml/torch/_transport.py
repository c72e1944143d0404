"""Where a process group's bytes travel: the switch, or torch's rendezvous store.

- ``_SwitchTransport`` (the default group, a switchml job): all-reduces of float32, int32,
  float16 and bfloat16 with SUM or AVG go through the switch, quantized as the
  ``Communicator`` does; byte broadcasts and all-gathers go through it too, exactly
  (``Communicator.broadcast_bytes``/``allgather_bytes``, built in Rust from int32 sums with
  one contributor per word).
- ``_StoreTransport`` (subgroups from ``dist.new_group``, and point-to-point for every
  group): the ``store`` torch hands the backend (a TCPStore behind rank 0's rendezvous).
  A switch job has a fixed set of ranks, so a subgroup cannot join it; the store serves
  any set, and point-to-point traffic, which a sum over every rank cannot carry.
  Every rank sets a key and reads the others'; the last reader deletes them. It is meant
  for control data and small tensors (metrics, a few MB), not bulk traffic.

Both count what they carry in ``counters`` (what ``ProcessGroupSwitchML.stats()``
reports).
"""

import collections as _collections
from typing import Any, Dict, List, Optional

import switchml as _switchml

__all__: List[str] = []

# The switch's element types, by torch dtype name.
SWITCH_DTYPES = {"torch.float32", "torch.int32", "torch.float16", "torch.bfloat16"}


class _StoreTransport:
    """Collectives over torch's store: any subset of ranks, and point-to-point."""

    def __init__(self, store: Any, rank: int, size: int) -> None:
        self.rank, self.size = rank, size
        self._store = store
        self._rounds = 0
        self._sent: Dict[tuple, int] = _collections.defaultdict(int)
        self._received: Dict[tuple, int] = _collections.defaultdict(int)
        self.counters = _collections.Counter()

    def _read_and_clean(self, keys: List[str], round_key: str) -> List[bytes]:
        values = [self._store.get(k) for k in keys]
        # The last rank to read deletes the keys (older torch stores may not delete).
        if self._store.add(round_key, 1) == self.size:
            for k in keys + [round_key]:
                try:
                    self._store.delete_key(k)
                except (AttributeError, RuntimeError):
                    pass
        return values

    def allgather_bytes(self, data: bytes) -> List[bytes]:
        """Return every rank's ``data``, in rank order."""
        n = self._rounds
        self._rounds += 1
        self._store.set(f"switchml/ag/{n}/{self.rank}", bytes(data))
        keys = [f"switchml/ag/{n}/{r}" for r in range(self.size)]
        self.counters["store_collectives"] += 1
        self.counters["store_bytes"] += len(data)
        return self._read_and_clean(keys, f"switchml/ag/{n}/read")

    def broadcast_bytes(self, data: bytes, root: int) -> bytes:
        """Return ``root``'s ``data`` on every rank."""
        n = self._rounds
        self._rounds += 1
        key = f"switchml/bc/{n}"
        if self.rank == root:
            self._store.set(key, bytes(data))
            self.counters["store_bytes"] += len(data)
        self.counters["store_collectives"] += 1
        return self._read_and_clean([key], f"switchml/bc/{n}/read")[0]

    def send_bytes(self, data: bytes, dst: int, tag: int) -> None:
        """Leave ``data`` for rank ``dst`` (returns at once)."""
        pair = (dst, tag)
        n = self._sent[pair]
        self._sent[pair] += 1
        self._store.set(f"switchml/p2p/{self.rank}/{dst}/{tag}/{n}", bytes(data))
        self.counters["store_p2p"] += 1
        self.counters["store_bytes"] += len(data)

    def recv_bytes(self, src: int, tag: int) -> bytes:
        """Return the next bytes rank ``src`` sent this rank with ``tag`` (waits for them, as
        long as the store's timeout: the process group's)."""
        pair = (src, tag)
        n = self._received[pair]
        self._received[pair] += 1
        key = f"switchml/p2p/{src}/{self.rank}/{tag}/{n}"
        data = self._store.get(key)
        try:
            self._store.delete_key(key)
        except (AttributeError, RuntimeError):
            pass
        self.counters["store_p2p"] += 1
        return data


class _SwitchTransport(_StoreTransport):
    """The default group: a switchml job for collectives, the store for point-to-point."""

    def __init__(self, store: Any, rank: int, size: int, comm: "_switchml.Communicator") -> None:
        super().__init__(store, rank, size)
        self.comm = comm

    def can_reduce(self, dtype: Any, op: "_switchml.ReduceOp") -> bool:
        """Whether the switch computes ``op`` over ``dtype`` (SUM, AVG of its types)."""
        if op == _switchml.ReduceOp.AVG and str(dtype) == "torch.int32":
            return False
        return str(dtype) in SWITCH_DTYPES and op in (_switchml.ReduceOp.SUM,
                                                      _switchml.ReduceOp.AVG)

    def reduce(self, tensor: Any, op: "_switchml.ReduceOp") -> Any:
        """All-reduce a contiguous CPU tensor in place through the switch."""
        self.counters["switch_allreduce"] += 1
        return self.comm.allreduce(tensor, op)

    def reduce_async(self, tensor: Any, op: "_switchml.ReduceOp") -> Any:
        """Start an all-reduce through the switch; return its handle."""
        self.counters["switch_allreduce"] += 1
        return self.comm.allreduce_async(tensor, op)

    def allgather_bytes(self, data: bytes) -> List[bytes]:
        self.counters["switch_byte_collectives"] += 1
        return self.comm.allgather_bytes(data)

    def broadcast_bytes(self, data: bytes, root: int) -> bytes:
        self.counters["switch_byte_collectives"] += 1
        return self.comm.broadcast_bytes(data, root)


def stats(transport: _StoreTransport, comm: Optional["_switchml.Communicator"]) -> dict:
    """The group's counters: the communicator's (if any) and where the bytes went."""
    out = dict(comm.stats()) if comm is not None and not comm.closed else {}
    for name in ("switch_allreduce", "switch_byte_collectives", "host_reduced",
                 "store_collectives", "store_p2p", "store_bytes"):
        out[name] = transport.counters[name]
    return out
