"""The measurement driver of bench/run-netbench (run that, not this, unless you know why).

On the testbed of bench/testbed (already up), it runs three all-reduce systems on the same
shaped links and appends one JSON line per measurement to --out:

- switchml-rs: `switchml switch` in nb-sw, one `switchml worker` per worker namespace,
  a fresh switch per tensor;
- Gloo: bench/gloo_rank.py (torch.distributed, gloo backend) in each worker namespace;
- Open MPI: bench/mpi_allreduce.c under mpirun (TCP BTL, ring algorithm forced), started in
  nb-w0, its daemons in the other namespaces through bench/netns-agent.

Runs alternate the systems' order (run k starts with system k mod 3). Meanwhile a sampler
thread reads /proc/stat (host CPU) and each worker link's byte counters (/proc/PID/net/dev
of an idle process in each namespace) every 20 ms; every measurement carries the host CPU
utilisation and the bytes each link direction carried over its timed region.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
SWITCH_IP = "10.77.0.254"
SWITCH_PORT = 48864
PYTHON = "/usr/bin/python3"
SYSTEMS = ["switchml", "gloo", "mpi"]


def worker_ns(rank):
    return f"nb-w{rank}"


def worker_ip(rank):
    return f"10.77.0.{rank + 1}"


def log(msg):
    print(f"[netbench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- sampling


def read_cpu():
    """(busy, total) jiffies over every CPU, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    total = sum(fields[:8])  # guest time is already inside user
    return total - idle, total


def read_link(pid):
    """eth0's (tx_bytes, rx_bytes) in the namespace of process `pid`."""
    with open(f"/proc/{pid}/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == "eth0":
                v = [int(x) for x in rest.split()]
                return v[8], v[0]
    return 0, 0


class Sampler(threading.Thread):
    """Samples host CPU and every worker link's byte counters every `period` seconds."""

    def __init__(self, workers, period=0.02):
        super().__init__(daemon=True)
        self.period = period
        self.anchors = [
            subprocess.Popen(["ip", "netns", "exec", worker_ns(r), "sleep", "infinity"])
            for r in range(workers)
        ]
        self.samples = []
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.hz = os.sysconf("SC_CLK_TCK")
        self.cpus = os.cpu_count()

    def sample(self):
        t = time.time()
        busy, total = read_cpu()
        links = []
        for a in self.anchors:
            try:
                links.append(read_link(a.pid))
            except OSError:
                links.append((0, 0))
        return (t, busy, total, links)

    def run(self):
        time.sleep(0.2)  # let the anchors enter their namespaces
        while not self.stopped.is_set():
            s = self.sample()
            with self.lock:
                self.samples.append(s)
                if len(self.samples) > 200_000:
                    del self.samples[:100_000]
            time.sleep(self.period)

    def stop(self):
        self.stopped.set()
        for a in self.anchors:
            a.kill()
            a.wait()

    def at(self, t):
        """A sample interpolated at time t."""
        with self.lock:
            s = list(self.samples[-5000:])
        if not s:
            return None
        before = [x for x in s if x[0] <= t]
        after = [x for x in s if x[0] >= t]
        if not before or not after:
            return None
        a, b = before[-1], after[0]
        f = 0.0 if b[0] == a[0] else (t - a[0]) / (b[0] - a[0])
        lerp = lambda x, y: x + (y - x) * f  # noqa: E731
        links = [(lerp(la[0], lb[0]), lerp(la[1], lb[1])) for la, lb in zip(a[3], b[3])]
        return (t, lerp(a[1], b[1]), lerp(a[2], b[2]), links)

    def window(self, start, end, workers):
        """Host CPU and link bytes between two Unix times (waits for the next sample)."""
        deadline = time.time() + 1.0
        while time.time() < deadline:
            with self.lock:
                last = self.samples[-1][0] if self.samples else 0
            if last >= end:
                break
            time.sleep(self.period)
        a, b = self.at(start), self.at(end)
        if a is None or b is None or b[2] <= a[2]:
            return {}
        busy, total = b[1] - a[1], b[2] - a[2]
        up = [b[3][r][0] - a[3][r][0] for r in range(workers)]
        down = [b[3][r][1] - a[3][r][1] for r in range(workers)]
        return {
            "host_util": busy / total,
            "host_cpu_seconds": busy / self.hz,
            "link_up_bytes": up,
            "link_down_bytes": down,
        }


# ---------------------------------------------------------------- processes


class Proc:
    """A child with its output in files and its resource usage taken at exit."""

    def __init__(self, argv, tag, tmp, env=None):
        self.tag = tag
        self.out_path = os.path.join(tmp, f"{tag}.out")
        self.err_path = os.path.join(tmp, f"{tag}.err")
        self.out = open(self.out_path, "w")
        self.err = open(self.err_path, "w")
        self.p = subprocess.Popen(argv, stdout=self.out, stderr=self.err, env=env,
                                  start_new_session=True)
        self.code = None
        self.cpu = 0.0

    def poll(self):
        if self.code is not None:
            return True
        pid, status, ru = os.wait4(self.p.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.code = os.waitstatus_to_exitcode(status)
        self.p.returncode = self.code
        self.cpu = ru.ru_utime + ru.ru_stime
        self.out.close()
        self.err.close()
        return True

    def kill(self, sig=signal.SIGKILL):
        if self.code is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass

    def stdout(self):
        with open(self.out_path) as f:
            return f.read()

    def stderr_tail(self, n=5):
        with open(self.err_path) as f:
            lines = [x for x in f.read().splitlines() if x.strip()]
        return " | ".join(lines[-n:])

    def json_lines(self):
        out = []
        for line in self.stdout().splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        return out


def wait_all(procs, timeout):
    """Wait for every process; kill the rest after `timeout`. Return whether all exited."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(p.poll() for p in procs):
            return True
        time.sleep(0.02)
    for p in procs:
        p.kill()
    for p in procs:
        while not p.poll():
            time.sleep(0.02)
    return False


def wait_for_line(proc, needle, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if needle in proc.stdout():
            return True
        if proc.poll():
            return False
        time.sleep(0.01)
    return False


# ---------------------------------------------------------------- the systems


class Bench:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="netbench-")
        self.seq = 0
        self.port = 29500
        self.sampler = None

    def tag(self, name):
        self.seq += 1
        return f"{self.seq:05d}-{name}"

    def budget(self, p, size):
        """A generous time limit for one all-reduce of `size` bytes over P ranks."""
        ring = 2 * (p - 1) / p * size * 8 / self.rate_bps
        return 30 + 20 * ring

    def switchml(self, p, sizes):
        rows = []
        for size in sizes:
            rows.append(self.switchml_one(p, size))
        return rows

    def switchml_one(self, p, size):
        a = self.a
        slots = a.lanes * a.window
        sw = Proc(["ip", "netns", "exec", "nb-sw", a.switchml, "switch", "--bind",
                   f"{SWITCH_IP}:{SWITCH_PORT}", "--job", f"0:{p}:{slots}", "--json"],
                  self.tag(f"switch-p{p}-{size}"), self.tmp)
        row = {"system": "switchml", "bytes": size, "world": p}
        if not wait_for_line(sw, "listening", 10):
            sw.kill()
            wait_all([sw], 5)
            return {**row, "error": f"switch did not start: {sw.stderr_tail()}"}
        workers = [
            Proc(["ip", "netns", "exec", worker_ns(r), a.switchml, "worker",
                  "--switch", f"{SWITCH_IP}:{SWITCH_PORT}", "--job", "0",
                  "--rank", str(r), "--world", str(p), "--elements", str(size // 4),
                  "--iterations", "1", "--count", str(a.count), "--window", str(a.window),
                  "--lanes", str(a.lanes), "--rto-ms", str(a.rto_ms),
                  "--retries", str(a.retries), "--coalesce-us", str(a.coalesce_us), "--json"],
                 self.tag(f"worker{r}-p{p}-{size}"), self.tmp)
            for r in range(p)
        ]
        finished = wait_all(workers, self.budget(p, size) + 60)
        sw.kill(signal.SIGINT)
        if not wait_all([sw], 10):
            log("the switch did not stop on SIGINT; killed")
        reports = [w.json_lines() for w in workers]
        if not finished or not all(reports) or any(w.code != 0 for w in workers):
            why = "timed out" if not finished else "; ".join(
                f"rank {r}: exit {w.code}: {w.stderr_tail()} {w.stdout()[-300:]}"
                for r, w in enumerate(workers) if w.code != 0 or not reports[r])
            return {**row, "error": why}
        rs = [r[-1] for r in reports]
        counters = next((x["counters"] for x in sw.json_lines() if "counters" in x), {})
        start = min(r["started_unix"] for r in rs)
        end = max(r["finished_unix"] for r in rs)
        return {
            **row,
            "seconds": max(r["seconds"] for r in rs),
            "cpu_seconds": sum(r["cpu_seconds"] for r in rs) + sw.cpu,
            "switch_cpu_seconds": sw.cpu,
            "verified": all(r["verified"] is True for r in rs),
            "max_error": max(r["max_error"] for r in rs),
            "retransmissions": sum(r["retransmissions"] for r in rs),
            "stale_results": sum(r.get("stale_results", 0) for r in rs),
            "packets_sent": sum(r["packets_sent"] for r in rs),
            "srtt_ms": [r.get("srtt_ms") for r in rs],
            "rto_ms": [r.get("rto_ms") for r in rs],
            "switch_counters": {k: counters.get(k) for k in
                                ("received", "sent", "send_failures", "total_drops")},
            "start": start,
            "end": end,
        }

    def gloo(self, p, sizes):
        self.port += 1
        env = dict(os.environ, GLOO_SOCKET_IFNAME="eth0", OMP_NUM_THREADS="1")
        ranks = [
            Proc(["ip", "netns", "exec", worker_ns(r), PYTHON, os.path.join(BENCH, "gloo_rank.py"),
                  "--rank", str(r), "--world", str(p), "--master", f"{worker_ip(0)}:{self.port}",
                  "--sizes", ",".join(map(str, sizes))],
                 self.tag(f"gloo{r}-p{p}"), self.tmp, env=env)
            for r in range(p)
        ]
        finished = wait_all(ranks, 120 + sum(self.budget(p, s) for s in sizes))
        per_rank = [{x["bytes"]: x for x in r.json_lines()} for r in ranks]
        rows = []
        for size in sizes:
            row = {"system": "gloo", "bytes": size, "world": p}
            got = [pr.get(size) for pr in per_rank]
            if not all(got):
                why = "timed out" if not finished else "; ".join(
                    f"rank {i}: exit {r.code}: {r.stderr_tail()}" for i, r in enumerate(ranks))
                rows.append({**row, "error": why})
                continue
            rows.append({
                **row,
                "seconds": max(g["seconds"] for g in got),
                "cpu_seconds": sum(g["cpu_seconds"] for g in got),
                "verified": all(g["verified"] for g in got),
                "start": min(g["start"] for g in got),
                "end": max(g["end"] for g in got),
            })
        return rows

    def mpi(self, p, sizes):
        hostfile = os.path.join(self.tmp, f"hosts-{p}")
        with open(hostfile, "w") as f:
            for r in range(p):
                f.write(f"{worker_ip(r)} slots=1\n")
        mpirun = [
            "mpirun", "--allow-run-as-root", "-np", str(p), "--hostfile", hostfile,
            "--mca", "plm_rsh_agent", os.path.join(BENCH, "netns-agent"),
            "--mca", "plm_rsh_no_tree_spawn", "1",
            "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", "10.77.0.0/24",
            "--mca", "oob_tcp_if_include", "10.77.0.0/24",
            "--mca", "coll_tuned_use_dynamic_rules", "1",
            "--mca", "coll_tuned_allreduce_algorithm", "4",
            # Four ranks share two cores: poll, but yield the CPU (Open MPI's setting for
            # oversubscribed nodes).
            "--mca", "mpi_yield_when_idle", "1",
            self.a.mpi_binary, ",".join(map(str, sizes)),
        ]
        argv = ["ip", "netns", "exec", worker_ns(0), "unshare", "--uts", "sh", "-c",
                'hostname nb-w0 && exec "$@"', "sh"] + mpirun
        proc = Proc(argv, self.tag(f"mpi-p{p}"), self.tmp)
        finished = wait_all([proc], 120 + sum(self.budget(p, s) for s in sizes))
        got = {x["bytes"]: x for x in proc.json_lines()}
        rows = []
        for size in sizes:
            row = {"system": "mpi", "bytes": size, "world": p}
            g = got.get(size)
            if g is None:
                why = "timed out" if not finished else f"exit {proc.code}: {proc.stderr_tail()}"
                rows.append({**row, "error": why})
                continue
            rows.append({**row, **{k: g[k] for k in ("seconds", "cpu_seconds", "verified",
                                                      "start", "end")}})
        return rows

    # ------------------------------------------------------------ orchestration

    def testbed(self, *args):
        subprocess.run([os.path.join(BENCH, "testbed"), *args], check=True,
                       stdout=subprocess.DEVNULL)

    def measure(self, out, phase, rate, loss, p, sizes, run):
        order = SYSTEMS[run % 3:] + SYSTEMS[:run % 3]
        for pos, system in enumerate(order):
            if system not in self.a.systems:
                continue
            log(f"{phase}: rate {rate} loss {loss}% P={p} run {run + 1}: {system}")
            drops_before = self.drops()
            rows = getattr(self, system)(p, sizes)
            drops_after = self.drops()
            for row in rows:
                row.update(phase=phase, rate=rate, rate_bps=self.rate_bps, loss_pct=loss,
                           run=run, position=pos)
                if "start" in row:
                    row.update(self.sampler.window(row["start"], row["end"], p))
                if loss > 0:
                    row["injected_drops_run"] = [b - a for a, b in zip(drops_before, drops_after)]
                out.write(json.dumps(row) + "\n")
                out.flush()
                if "error" in row:
                    log(f"  {system} {row['bytes']} B: FAILED: {row['error'][:500]}")
                else:
                    log(f"  {system} {row['bytes'] >> 20} MiB: {row['seconds']:.3f} s"
                        f"{'' if row['verified'] else ' WRONG RESULT'}"
                        + (f", {row['retransmissions']} resends" if system == "switchml" else ""))

    def drops(self):
        r = subprocess.run([os.path.join(BENCH, "testbed"), "counters"], capture_output=True,
                           text=True)
        try:
            return [int(x) for x in r.stdout.split()]
        except ValueError:
            return [0, 0]

    def main(self):
        a = self.a
        self.sampler = Sampler(max(a.workers))
        self.sampler.start()
        try:
            with open(a.out, "a") as out:
                out.write(json.dumps({"phase": "meta", **meta(a)}) + "\n")
                for rate in (a.rates if "sizes" in a.phases else []):
                    self.set_rate(rate)
                    self.testbed("loss", "0")
                    for run in range(a.runs):
                        for p in a.workers:
                            self.measure(out, "sizes", rate, 0.0, p, a.sizes, run)
                if a.loss and "loss" in a.phases:
                    self.set_rate(a.loss_rate)
                    for run in range(a.runs):
                        for loss in a.loss:
                            self.testbed("loss", str(loss))
                            self.measure(out, "loss", a.loss_rate, loss, a.loss_workers,
                                         [a.loss_size], run)
                    self.testbed("loss", "0")
        finally:
            self.sampler.stop()

    def set_rate(self, rate):
        self.testbed("shape", rate)
        self.rate_bps = rate_bps(rate)


def rate_bps(rate):
    r = rate.lower()
    for suffix, mult in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3), ("bit", 1)):
        if r.endswith(suffix):
            return int(float(r[: -len(suffix)]) * mult)
    raise ValueError(f"rate {rate}: use a tc rate like 100mbit")


def meta(a):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except subprocess.TimeoutExpired:
            return ""
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "kernel": os.uname().release,
        "cpus": os.cpu_count(),
        "cpu_model": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        "testbed": sh(os.path.join(BENCH, "testbed") + " status"),
        **{k: sh(f"cat /run/switchml-netbench/{k}") for k in ("mtu", "burst", "latency", "loss_method")},
        "tcp_congestion_control": sh("ip netns exec nb-w0 sysctl -n net.ipv4.tcp_congestion_control"),
        "torch": sh(f"{PYTHON} -c 'import torch; print(torch.__version__)'"),
        "openmpi": sh("mpirun --version | head -1"),
        "git": sh(f"git -C {BENCH} describe --always --dirty"),
        "switchml_tuning": {"count": a.count, "window": a.window, "lanes": a.lanes,
                            "rto_ms": a.rto_ms, "retries": a.retries,
                            "coalesce_us": a.coalesce_us},
        "args": {k: v for k, v in vars(a).items()},
    }


def sizes_arg(s):
    out = []
    for x in s.split(","):
        x = x.strip().upper()
        mult = 1
        for suffix, m in (("KIB", 1 << 10), ("MIB", 1 << 20), ("GIB", 1 << 30),
                          ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
            if x.endswith(suffix):
                x, mult = x[: -len(suffix)], m
                break
        out.append(int(x) * mult)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="JSON lines file to append to")
    p.add_argument("--switchml", required=True, help="the switchml binary")
    p.add_argument("--mpi-binary", required=True, help="the compiled mpi_allreduce")
    p.add_argument("--rates", default="100mbit,500mbit", type=lambda s: s.split(","))
    p.add_argument("--workers", default="2,3,4", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--sizes", default="1M,4M,16M,64M,256M", type=sizes_arg,
                   help="tensor sizes in bytes (suffixes K, M, G are binary)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--phases", default="sizes,loss", type=lambda s: s.split(","),
                   help="sizes: every rate, P and size without loss; loss: the loss sweep")
    p.add_argument("--systems", default="switchml,gloo,mpi", type=lambda s: s.split(","))
    p.add_argument("--loss", default="0,0.01,0.1,1",
                   type=lambda s: [float(x) for x in s.split(",")] if s else [],
                   help="loss sweep, percent per link direction (empty: none)")
    p.add_argument("--loss-rate", default="100mbit")
    p.add_argument("--loss-workers", type=int, default=4)
    p.add_argument("--loss-size", type=lambda s: sizes_arg(s)[0], default="64M")
    p.add_argument("--count", type=int, default=256, help="switchml values per packet")
    p.add_argument("--window", type=int, default=128, help="switchml slots per lane")
    p.add_argument("--lanes", type=int, default=1, help="switchml lanes per worker")
    p.add_argument("--rto-ms", type=int, default=30, help="switchml first retransmission timeout")
    p.add_argument("--retries", type=int, default=60, help="switchml resends before giving up")
    p.add_argument("--coalesce-us", type=int, default=0,
                   help="switchml lanes let datagrams gather this long after a wake-up")
    a = p.parse_args()
    for s in a.systems:
        if s not in SYSTEMS:
            p.error(f"unknown system {s}")
    Bench(a).main()


if __name__ == "__main__":
    main()
