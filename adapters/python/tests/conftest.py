"""Shared fixtures: a switch on a free loopback port and ranks run as threads."""

import socket
import threading

import pytest

import switchml


@pytest.fixture
def switch():
    """A switch serving job 1 for 2 ranks and job 2 for 3 ranks, stopped afterwards."""
    with switchml.Switch(["1:2", "2:3"]) as s:
        yield s


def run_ranks(world, body, **settings):
    """Run body(comm) for every rank of a job, one thread each; return results by rank.

    Re-raises the first exception a rank raised.
    """
    results, errors = {}, {}

    def rank(r):
        try:
            with switchml.Communicator(rank=r, world_size=world, **settings) as comm:
                results[r] = body(comm)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            errors[r] = e

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise next(iter(errors.values()))
    return results


def free_port():
    """A TCP port free on loopback now (for a rendezvous or a store)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
