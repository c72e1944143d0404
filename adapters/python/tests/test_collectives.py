"""Every collective, reduction and dtype of the "switchml" backend against Gloo's result,
in the same processes: the default group is "switchml" (launched with no switch started by
hand: rank 0 embeds one), a Gloo group of the same ranks beside it, and a "switchml"
subgroup (over torch's store). Where Gloo 1.13 does not do an operation (reduce_scatter,
all_to_all of a list, AVG, bool and bfloat16 reductions) the expected value is computed
from the ranks' inputs, which every rank knows."""

import os

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from conftest import free_port  # noqa: E402

WORLD = 2
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
          torch.int64, torch.int8, torch.uint8, torch.bool]
OPS = ["SUM", "AVG", "MAX", "MIN", "PRODUCT"]


def value(rank, dtype, shape=(2, 3)):
    """Rank ``rank``'s input: small numbers, so products and int8 sums stay in range."""
    n = 1
    for d in shape:
        n *= d
    base = (torch.arange(n) % 3 + rank + 1).reshape(shape)
    return (base % 2 == 0) if dtype == torch.bool else base.to(dtype)


def expected(op, dtype, shape=(2, 3)):
    """The reduction of every rank's ``value``, computed locally."""
    parts = [value(r, dtype, shape) for r in range(WORLD)]
    acc = parts[0].clone()
    for p in parts[1:]:
        if dtype == torch.bool:
            acc = acc | p if op in ("SUM", "MAX") else acc & p
        elif op in ("SUM", "AVG"):
            acc = acc + p
        elif op == "PRODUCT":
            acc = acc * p
        elif op == "MAX":
            acc = torch.maximum(acc, p)
        else:
            acc = torch.minimum(acc, p)
    return acc / WORLD if op == "AVG" else acc


def same(got, want, dtype, where):
    if dtype.is_floating_point:
        # The switch's float sum is block floating point (protocol.md section 5.2).
        assert torch.allclose(got.double(), want.double(), rtol=1e-3, atol=1e-3), (where, got, want)
    else:
        assert torch.equal(got, want), (where, got, want)


def check_reductions(rank, group, gloo, tag):
    for dtype in DTYPES:
        for op in OPS:
            if op == "AVG" and not dtype.is_floating_point:
                continue
            where = f"{tag} all_reduce {op} {dtype}"
            ours = value(rank, dtype)
            dist.all_reduce(ours, getattr(dist.ReduceOp, op), group=group)
            want = expected(op, dtype)
            try:
                theirs = value(rank, dtype)
                dist.all_reduce(theirs, getattr(dist.ReduceOp, op), group=gloo)
                same(theirs, want, dtype, where + " (gloo vs local)")
            except (RuntimeError, ValueError):
                pass  # Gloo 1.13 refuses it (AVG, bool, bfloat16): the local value stands
            same(ours, want, dtype, where)
    for dtype in (torch.int32, torch.int64, torch.uint8):
        for op in ("BAND", "BOR", "BXOR"):
            ours, theirs = value(rank, dtype) * 5, value(rank, dtype) * 5
            dist.all_reduce(ours, getattr(dist.ReduceOp, op), group=group)
            dist.all_reduce(theirs, getattr(dist.ReduceOp, op), group=gloo)
            assert torch.equal(ours, theirs), (tag, op, dtype, ours, theirs)
    # 0-dim and non-contiguous tensors, in place.
    scalar = torch.tensor(float(rank + 1))
    dist.all_reduce(scalar, group=group)
    assert scalar.item() == sum(range(1, WORLD + 1)) and scalar.dim() == 0
    t = value(rank, torch.float32, (3, 2)).t()
    assert not t.is_contiguous()
    dist.all_reduce(t, group=group)
    same(t, expected("SUM", torch.float32, (3, 2)).t(), torch.float32, f"{tag} transposed")
    count = torch.tensor(rank == 0)
    dist.all_reduce(count, dist.ReduceOp.SUM, group=group)  # torch.tensor(correct) idiom
    assert bool(count)


def check_data_movement(rank, group, gloo, tag):
    for dtype in (torch.float64, torch.int64, torch.uint8, torch.bool, torch.bfloat16):
        # Gloo 1.13 moves neither bool nor bfloat16 ("Invalid scalar type").
        gloo_too = dtype not in (torch.bool, torch.bfloat16)
        for g, name in ((group, tag),) + (((gloo, "gloo"),) if gloo_too else ()):
            where = f"{name} {dtype}"
            b = value(rank, dtype)
            dist.broadcast(b, src=1, group=g)
            assert torch.equal(b, value(1, dtype)), where
            outs = [torch.empty((2, 3), dtype=dtype) for _ in range(WORLD)]
            dist.all_gather(outs, value(rank, dtype), group=g)
            assert all(torch.equal(o, value(r, dtype)) for r, o in enumerate(outs)), where
            if g is group:  # Gloo 1.13 has no _allgather_base
                flat = torch.empty((WORLD * 2, 3), dtype=dtype)
                dist.all_gather_into_tensor(flat, value(rank, dtype), group=g)
                assert torch.equal(flat, torch.cat([value(r, dtype) for r in range(WORLD)])), where
            gathered = [torch.empty((2, 3), dtype=dtype) for _ in range(WORLD)] if rank == 0 else None
            dist.gather(value(rank, dtype), gathered, dst=0, group=g)
            if rank == 0:
                assert all(torch.equal(o, value(r, dtype)) for r, o in enumerate(gathered)), where
            piece = torch.empty((2, 3), dtype=dtype)
            pieces = [value(r + 10, dtype) for r in range(WORLD)] if rank == 0 else None
            dist.scatter(piece, pieces, src=0, group=g)
            assert torch.equal(piece, value(rank + 10, dtype)), where
        r = value(rank, torch.int64)
        dist.reduce(r, dst=0, op=dist.ReduceOp.MAX, group=group)
        if rank == 0:
            assert torch.equal(r, expected("MAX", torch.int64)), tag
    outs = [[torch.empty(2), torch.empty(3)] for _ in range(WORLD)]
    dist.all_gather_coalesced(outs, [torch.full((2,), float(rank)), torch.full((3,), 0.5 * rank)],
                              group=group)
    assert [int(o[0][0]) for o in outs] == list(range(WORLD)), tag
    assert [float(o[1][2]) for o in outs] == [0.5 * r for r in range(WORLD)], tag
    # reduce_scatter (Gloo 1.13 has neither form): piece r of the reduction.
    inputs = [value(rank, torch.float32) * (k + 1) for k in range(WORLD)]
    out = torch.empty((2, 3))
    dist.reduce_scatter(out, inputs, group=group)
    same(out, expected("SUM", torch.float32) * (rank + 1), torch.float32, f"{tag} reduce_scatter")
    out = torch.empty((2, 3), dtype=torch.int64)
    dist.reduce_scatter_tensor(out, torch.cat([value(rank, torch.int64)] * WORLD), group=group)
    assert torch.equal(out, expected("SUM", torch.int64)), tag
    # all_to_all_single with uneven splits, checked against Gloo's.
    splits = [1, 2] if rank == 0 else [2, 1]
    src = torch.arange(3, dtype=torch.float64) + 10 * rank
    out_splits = [[1, 2], [2, 1]][rank]
    ours = torch.empty(sum(out_splits), dtype=torch.float64)
    dist.all_to_all_single(ours, src, out_splits, splits, group=group)
    theirs = torch.empty(sum(out_splits), dtype=torch.float64)
    dist.all_to_all_single(theirs, src, out_splits, splits, group=gloo)
    assert torch.equal(ours, theirs), (tag, ours, theirs)
    outs = [torch.empty(2, dtype=torch.int8) for _ in range(WORLD)]
    dist.all_to_all(outs, [torch.full((2,), 10 * rank + k, dtype=torch.int8)
                           for k in range(WORLD)], group=group)
    assert [o.tolist() for o in outs] == [[10 * s + rank] * 2 for s in range(WORLD)], tag
    # The object collectives real scripts use (uint8 and int64 tensors underneath).
    objects = [None] * WORLD
    dist.all_gather_object(objects, {"rank": rank, "name": "r" * (rank + 1)}, group=group)
    assert objects == [{"rank": r, "name": "r" * (r + 1)} for r in range(WORLD)], tag
    shared = [{"from": rank}, rank * 1.5]
    dist.broadcast_object_list(shared, src=1, group=group)
    assert shared == [{"from": 1}, 1.5], tag
    # Point-to-point, both ways, any dtype.
    peer = 1 - rank
    sent = value(rank, torch.int64)
    got = torch.empty((2, 3), dtype=torch.int64)
    if rank == 0:
        dist.send(sent, peer, group=group)
        dist.recv(got, peer, group=group)
    else:
        dist.recv(got, peer, group=group)
        dist.send(sent, peer, group=group)
    assert torch.equal(got, value(peer, torch.int64)), tag
    dist.barrier(group=group)


def overlap(rank, store):
    """An asynchronous all-reduce returns before it is done: rank 1 joins in only after
    rank 0 has seen its Work still in flight, so the call cannot have waited for it."""
    t = torch.full((1000,), float(rank + 1))
    if rank == 0:
        work = dist.all_reduce(t, async_op=True)
        assert not work.is_completed()
        store.set("go", "1")
    else:
        store.wait(["go"])
        work = dist.all_reduce(t, async_op=True)
    works = [dist.all_reduce(torch.full((10,), float(k)), async_op=True) for k in range(3)]
    work.wait()
    assert torch.all(t == 3.0)
    for w in works:
        w.wait()
        assert w.is_completed()
    assert torch.equal(works[2].result()[0], torch.full((10,), 4.0))


def collectives(rank, world, port, store_port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    os.environ.pop("SWITCHML_SWITCH", None)
    import switchml.torch  # noqa: F401 - registers "switchml"

    dist.init_process_group("switchml", rank=rank, world_size=world)
    gloo = dist.new_group(backend="gloo")
    sub = dist.new_group(backend="switchml")
    solo = dist.new_group([WORLD - 1], backend="switchml")  # a strict subset: over the store
    if rank == WORLD - 1:
        t = torch.full((3,), 5, dtype=torch.int64)
        dist.all_reduce(t, dist.ReduceOp.MAX, group=solo)
        dist.broadcast(t, src=WORLD - 1, group=solo)
        assert torch.all(t == 5)
    store = dist.TCPStore("127.0.0.1", store_port, world, rank == 0)
    overlap(rank, store)
    for group, tag in ((None, "switch"), (sub, "subgroup")):
        check_reductions(rank, group, gloo, tag)
        check_data_movement(rank, group, gloo, tag)
    stats = dist.distributed_c10d._get_default_group().stats()
    assert stats["switch_allreduce"] > 0 and stats["host_reduced"] > 0, stats
    assert stats["switch_byte_collectives"] > 0 and stats["store_p2p"] > 0, stats
    assert stats["tensors"] == stats["switch_allreduce"], stats
    dist.barrier()
    dist.destroy_process_group()


def test_every_collective_and_dtype_against_gloo():
    mp.spawn(collectives, args=(WORLD, free_port(), free_port()), nprocs=WORLD)
