"""The binding over NumPy arrays: in-place sums and averages of every type, the async
handle, counters, and errors that keep the Rust words."""

import threading

import numpy as np
import pytest

import switchml
from conftest import run_ranks


def test_float32_sum_in_place_without_copies(switch):
    def body(comm):
        x = np.full(5000, 1.0 + comm.rank, dtype=np.float32)
        address = x.__array_interface__["data"][0]
        assert comm.allreduce(x) is x
        assert x.__array_interface__["data"][0] == address
        return x

    for x in run_ranks(2, body, switch=switch.address, job=1).values():
        assert np.all(x == 3.0)


def test_every_type_and_average(switch):
    def body(comm):
        r = comm.rank
        i = np.arange(1000, dtype=np.int32) * (r + 1)
        h = np.full(300, 0.5 * (r + 1), dtype=np.float16)
        f = np.full(700, 2.0 * (r + 1), dtype=np.float32)
        comm.allreduce(i)
        comm.allreduce(h, switchml.SUM)
        comm.allreduce(f, switchml.AVERAGE)
        return i, h, f

    for i, h, f in run_ranks(3, body, switch=switch.address, job=2).values():
        assert np.array_equal(i, np.arange(1000, dtype=np.int32) * 6)
        assert np.all(h == np.float16(3.0))
        assert np.allclose(f, 4.0)


def test_bfloat16_from_raw_uint16(switch):
    one = np.uint16(0x3F80)  # bfloat16 1.0

    def body(comm):
        x = np.full(64, one, dtype=np.uint16)
        comm.allreduce(x, dtype="bf16")
        return x

    for x in run_ranks(2, body, switch=switch.address, job=1).values():
        assert np.all(x == np.uint16(0x4000))  # bfloat16 2.0


def test_async_handles_in_flight_together(switch):
    def body(comm):
        xs = [np.full(2000, float(k + comm.rank), dtype=np.float32) for k in range(4)]
        handles = [comm.allreduce_async(x) for x in xs]
        for h in handles:
            h.wait()
            assert h.is_completed()
        handles[0].wait()  # again: returns at once
        return xs, comm.stats()

    for xs, stats in run_ranks(2, body, switch=switch.address, job=1).values():
        for k, x in enumerate(xs):
            assert np.all(x == 2 * k + 1)
        # The lanes publish their counters as they go: only check they are there.
        assert stats["sent"] > 0 and stats["results"] > 0
        assert set(stats) >= {"retransmissions", "stale_results", "ignored", "tensors"}


def test_settings_from_the_environment(switch, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("SWITCHML_SWITCH", switch.address)
    monkeypatch.setenv("SWITCHML_JOB", "1")
    monkeypatch.setenv("SWITCHML_LANES", "1")

    def body(comm):
        return comm.config()

    # RANK comes from the keyword (arguments beat the environment).
    for r, config in run_ranks(2, body).items():
        assert config["rank"] == r
        assert (config["world_size"], config["job"], config["lanes"]) == (2, 1, 1)
        assert config["switch"] == switch.address
        # Every setting but the key (a secret) and the fallback (off); the count as chosen
        # from the path: loopback carries the largest, 1,024.
        assert set(config) == set(switchml.SETTINGS) - {"key", "fallback_addr"}, config
        assert config["count"] == 1024 and config["dialect"] == "switchml", config


def test_refused_inputs(switch):
    def body(comm):
        with pytest.raises(switchml.NonFiniteError, match="element 1 is NaN"):
            comm.allreduce(np.array([0.0, np.nan], dtype=np.float32))
        with pytest.raises(TypeError, match="float64"):
            comm.allreduce(np.zeros(4))
        with pytest.raises(ValueError, match="contiguous"):
            comm.allreduce(np.zeros((4, 4), dtype=np.float32)[:, 1])
        frozen = np.zeros(4, dtype=np.float32)
        frozen.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            comm.allreduce(frozen)
        x = np.ones(8, dtype=np.float32)
        comm.allreduce(x)  # the stream goes on after the refusals
        return x

    for x in run_ranks(2, body, switch=switch.address, job=1, non_finite="error").values():
        assert np.all(x == 2.0)


def test_non_finite_values_reach_every_rank(switch):
    def body(comm):
        assert comm.config()["non_finite"] == "propagate"
        x = np.ones(4, dtype=np.float32)
        if comm.rank == 1:
            x[2] = np.inf
        comm.allreduce(x)
        return x

    for x in run_ranks(2, body, switch=switch.address, job=1).values():
        assert not np.isfinite(x).any()  # one chunk: every element is +inf
        assert np.all(x == np.inf)


def test_missing_setting_is_named(monkeypatch):
    for name in ("RANK", "SWITCHML_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(switchml.ConfigError, match="RANK is not set"):
        switchml.Communicator(world_size=1, switch="127.0.0.1:1")


def test_a_rank_that_never_joins_is_named(switch):
    # 2 s: long enough for the switch's answer to come back on a busy machine.
    with pytest.raises(switchml.JoinTimeoutError, match="ranks 1 never joined") as e:
        switchml.Communicator(rank=0, world_size=2, switch=switch.address, job=1,
                              join_timeout_ms=2000)
    assert e.value.ranks == [1]


def test_a_rank_that_never_contributes_is_named_with_the_slot(switch):
    def body(comm):
        if comm.rank == 0:
            with pytest.raises(switchml.RankFailedError, match=r"slot 0 stalled .* ranks 1") as e:
                comm.allreduce(np.ones(10, dtype=np.float32))
            assert (e.value.rank, e.value.ranks) == (1, [1])
        return True

    # Patient enough that the Probe's answer comes back on a busy machine (with 2 ms and 3
    # retries the stall could be reported before it, as "the switch does not answer").
    run_ranks(2, body, switch=switch.address, job=1, rto_ms=50, retries=4)


def test_a_stopped_and_restarted_switch_is_reported():
    """As adapters/worker/tests/restart.rs: the stopping switch tells its runs."""
    ready, go, outcome = threading.Barrier(3), threading.Event(), {}

    def body(comm):
        ready.wait()
        go.wait()
        with pytest.raises(switchml.StreamError) as e:
            comm.allreduce(np.ones(10, dtype=np.float32))
        outcome[comm.rank] = str(e.value)
        return True

    with switchml.Switch(["1:2"]) as first:
        port = first.port
        ranks = threading.Thread(
            target=run_ranks, args=(2, body), kwargs={"switch": first.address, "job": 1}
        )
        ranks.start()
        ready.wait()
    with switchml.Switch(["1:2"], bind=f"127.0.0.1:{port}"):
        go.set()
        ranks.join(30)
    assert len(outcome) == 2, outcome
    for message in outcome.values():
        assert "the switch is shutting down" in message, message


def test_nothing_listening_is_reported():
    with switchml.Switch(["1:1"]) as s:
        address = s.address
    with pytest.raises(switchml.SwitchUnreachableError, match="nothing listens at"):
        switchml.Communicator(rank=0, world_size=1, switch=address)


def test_closed_communicator_raises():
    with switchml.Switch(["3:1"]) as s:
        c = switchml.Communicator(rank=0, world_size=1, switch=s.address, job=3)
        c.close()
        assert c.closed
        with pytest.raises(switchml.SwitchMLError, match="closed"):
            c.allreduce(np.ones(1, dtype=np.float32))


def test_switch_counters_and_job_tuples():
    with switchml.Switch([(4, 1, 16, 0xABC)]) as s:
        with switchml.Communicator(rank=0, world_size=1, switch=s.address, job=4,
                                   key="abc", lanes=1, window=16) as c:
            x = np.ones(100, dtype=np.float32)
            c.allreduce(x)
        final = s.stop()
    assert np.all(x == 1.0)
    assert final["received"] > 0 and final["jobs"][4]["received"] > 0


def test_a_job_the_switch_does_not_know_falls_back_to_the_host_ring(switch):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        rendezvous = "127.0.0.1:%d" % s.getsockname()[1]

    def body(comm):
        x = np.full(1000, float(comm.rank + 1), dtype=np.float32)
        comm.allreduce(x)
        return x, comm.stats(), comm.fallback_reason

    # Job 7 is not registered: the ranks all-reduce over their ring, and say so.
    results = run_ranks(2, body, switch=switch.address, job=7, fallback_addr=rendezvous,
                        fallback_timeout_ms=5000)
    for x, stats, reason in results.values():
        assert np.all(x == 3.0)
        assert (stats["fallbacks"], stats["fallback_tensors"]) == (1, 1)
        assert stats["fallback_bytes"] == 4000
        assert "does not know this job" in reason


def test_tensors_are_counted_once_each(switch):
    def body(comm):
        for _ in range(3):
            comm.allreduce(np.ones(20000, dtype=np.float32))
        comm.allreduce_async(np.ones(20000, dtype=np.float32)).wait()
        return comm.stats()

    # Two lanes carry a part of each tensor each; the count is still one per tensor.
    for stats in run_ranks(2, body, switch=switch.address, job=1, lanes=2).values():
        assert stats["tensors"] == 4, stats


def test_reduce_ops_by_name():
    assert switchml.SUM is switchml.ReduceOp.SUM and switchml.AVERAGE is switchml.ReduceOp.AVG
    assert str(switchml.ReduceOp.MAX) == "MAX"

    def body(comm):
        with pytest.raises(switchml.UnsupportedError, match="^MAX: the switch only adds"):
            comm.allreduce(np.ones(4, dtype=np.float32), switchml.ReduceOp.MAX)
        x = np.ones(4, dtype=np.float32)
        comm.allreduce(x, "average")  # the value still works
        return x

    with switchml.Switch(["3:1"]) as s:
        assert np.all(run_ranks(1, body, switch=s.address, job=3)[0] == 1.0)
