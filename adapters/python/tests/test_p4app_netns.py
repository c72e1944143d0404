"""The PyTorch side of the original SwitchML's dialect, end to end in network namespaces:
``switchml switch --dialect p4app`` (the CLI, on raw frames of a veth) serves two ranks,
each a process in a namespace of its own, that train a DDP model through the
``"switchml"`` backend and its hook with ``SWITCHML_DIALECT=p4app`` (the gRPC calls of the
original client, then the dialect's frames). Afterwards the switch's admin socket, its
``--metrics`` endpoint and ``switchml doctor --dialect p4app`` must all tell the same story.

::

    ns w1: mv1 10.78.0.1 ─┐
    ns w2: mv2 10.78.0.2 ─┴─ macvlan on h0 (ns hub) ══ veth ══ s0 (ns sw)
                                                             switch 10.78.0.254 (raw frames)
                                                             gRPC   10.78.0.253:50099

Root only (CI runs as root), and the ``switchml`` binary (``SWITCHML_CLI``, else the
workspace's target/debug or target/release); skipped with the reason otherwise.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parents[3]
SWITCH_IP, CONTROL_IP = "10.78.0.254", "10.78.0.253"
RANKS = 2

RANK_BODY = textwrap.dedent("""
    import os, sys
    import torch
    import torch.distributed as dist
    import switchml.torch as switchml_torch

    rank, world, store = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dist.init_process_group("switchml", init_method=f"file://{store}", rank=rank,
                            world_size=world)
    group = dist.distributed_c10d._get_default_group()
    t = torch.arange(1000, dtype=torch.float32) * (rank + 1)
    dist.all_reduce(t)
    assert torch.equal(t, torch.arange(1000, dtype=torch.float32) * 3), t
    i = torch.full((70,), 5 - rank, dtype=torch.int32)
    dist.all_reduce(i)
    assert torch.all(i == 9), i
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    hooked = torch.nn.parallel.DistributedDataParallel(model)
    hooked.register_comm_hook(group.comm, switchml_torch.allreduce_hook)
    opt = torch.optim.SGD(hooked.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)
    for _ in range(5):
        opt.zero_grad()
        x = torch.randn(4, 8)
        hooked(x).pow(2).sum().backward()
        opt.step()
    # Every rank applied the same averaged gradients, so the weights agree.
    flat = torch.cat([p.detach().flatten() for p in hooked.parameters()])
    out = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(out, flat)
    assert all(torch.allclose(o, out[0]) for o in out), "the ranks' weights differ"
    dist.destroy_process_group()
    print("rank", rank, "done")
""")


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=60)


def switchml_cli():
    for c in (os.environ.get("SWITCHML_CLI"), ROOT / "target/debug/switchml",
              ROOT / "target/release/switchml"):
        if c and pathlib.Path(c).is_file():
            return str(c)
    return None


@pytest.fixture
def topology():
    """The drawing of the module doc; namespaces deleted afterwards, even on failure."""
    if os.geteuid() != 0:
        pytest.skip("the namespace test needs root")
    if shutil.which("ip") is None:
        pytest.skip("iproute2 (`ip`) is not installed")
    base = f"p4py{os.getpid() % 100000}"
    names = {what: f"{base}-{what}" for what in ["sw", "hub"] + [f"w{r}" for r in range(RANKS)]}
    made = []
    try:
        for n in names.values():
            if sh("ip", "netns", "add", n, check=False).returncode != 0:
                pytest.skip("`ip netns add` failed")
            made.append(n)
            sh("ip", "-n", n, "link", "set", "lo", "up")
        sw, hub = names["sw"], names["hub"]
        sh("ip", "link", "add", "s0", "netns", sw, "type", "veth", "peer", "name", "h0",
           "netns", hub)
        sh("ip", "-n", sw, "addr", "add", f"{CONTROL_IP}/24", "dev", "s0")
        sh("ip", "-n", sw, "link", "set", "s0", "up")
        sh("ip", "-n", hub, "link", "set", "h0", "up")
        for r in range(RANKS):
            ns, dev = names[f"w{r}"], f"mv{r + 1}"
            sh("ip", "-n", hub, "link", "add", dev, "link", "h0", "type", "macvlan", "mode",
               "bridge")
            sh("ip", "-n", hub, "link", "set", dev, "netns", ns)
            sh("ip", "-n", ns, "addr", "add", f"10.78.0.{r + 1}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        yield names
    finally:
        for n in made:
            sh("ip", "netns", "del", n, check=False)


def test_ddp_through_the_dialect_switch_of_the_cli(topology, tmp_path):
    cli = switchml_cli()
    if cli is None:
        pytest.skip("no switchml binary: set SWITCHML_CLI or `cargo build -p switchml-cli`")
    admin = tmp_path / "admin.sock"
    sw = topology["sw"]
    switch = subprocess.Popen(
        ["ip", "netns", "exec", sw, cli, "switch", "--dialect", "p4app", "--iface", "s0",
         "--ip", SWITCH_IP, "--control", f"{CONTROL_IP}:50099", "--admin", str(admin),
         "--metrics", "127.0.0.1:9464"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ranks = []
    try:
        deadline = time.monotonic() + 30
        while not admin.exists():
            assert switch.poll() is None, switch.stdout.read()
            assert time.monotonic() < deadline, "the switch made no admin socket in 30 s"
            time.sleep(0.05)
        env = dict(os.environ, SWITCHML_DIALECT="p4app", SWITCHML_COUNT="64",
                   SWITCHML_SWITCH=f"{CONTROL_IP}:50099")
        store = tmp_path / "store"
        ranks = [subprocess.Popen(
            ["ip", "netns", "exec", topology[f"w{r}"], sys.executable, "-c", RANK_BODY,
             str(r), str(RANKS), str(store)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for r in range(RANKS)]
        for r, p in enumerate(ranks):
            out, _ = p.communicate(timeout=240)
            assert p.returncode == 0, f"rank {r}:\n{out}"
            assert f"rank {r} done" in out, out

        stats = sh(cli, "job", "--admin", str(admin), "stats").stdout
        scraped = sh("ip", "netns", "exec", sw, sys.executable, "-c",
                     "import urllib.request as u; "
                     "print(u.urlopen('http://127.0.0.1:9464/metrics').read().decode())").stdout
        for text in (stats, scraped):
            lines = dict(line.rsplit(" ", 1) for line in text.splitlines()
                         if line.startswith("switchml_p4app_"))
            assert lines["switchml_p4app_session_workers"] == str(RANKS), text
            assert lines["switchml_p4app_session_registered"] == str(RANKS), text
            assert int(lines["switchml_p4app_multicast_total"]) > 0, text
            assert lines['switchml_p4app_dropped_total{reason="unknown_sender"}'] == "0", text

        doctor = sh(cli, "doctor", "--dialect", "p4app", "--admin", str(admin), "--json",
                    check=False)
        report = json.loads(doctor.stdout)
        assert report["workers"] == RANKS and report["missing"] == [], report
        assert report["counters"]["multicast"] > 0, report
    finally:
        for p in ranks:
            p.kill()
        switch.terminate()
        try:
            out, _ = switch.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            switch.kill()
            out, _ = switch.communicate()
    assert switch.returncode == 0, out
    assert "final counters" in out, out
