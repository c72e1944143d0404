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
import bisect
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

from share_phase import ShareScenarios

BENCH = os.path.dirname(os.path.abspath(__file__))
SWITCH_IP = "10.77.0.254"
SWITCH_PORT = 48864
PYTHON = "/usr/bin/python3"
SYSTEMS = ["switchml", "gloo", "mpi"]
# A measurement is "disturbed" when tasks other than the benchmark's used more than this
# share of one core (plus some slack for short ones) during its timed region.
FOREIGN_SHARE = 0.10
FOREIGN_SLACK = 0.03
# Children still running, killed if the driver is stopped.
LIVE = set()


def worker_ns(rank):
    return f"nb-w{rank}"


def worker_ip(rank):
    return f"10.77.0.{rank + 1}"


def log(msg):
    print(f"[netbench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- sampling


def read_cpu():
    """Jiffies over every CPU from /proc/stat: (user+nice+system, irq+softirq, idle+iowait,
    steal)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2], v[5] + v[6], v[3] + v[4], v[7]


def read_link(pid):
    """eth0's (tx_bytes, rx_bytes) in the namespace of process `pid`."""
    with open(f"/proc/{pid}/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == "eth0":
                v = [int(x) for x in rest.split()]
                return v[8], v[0]
    return 0, 0


class CpuGroup:
    """A CPU-accounting cgroup holding every process the benchmark starts (cgroup v1
    cpuacct, else v2), so that CPU time is counted for all of a system's processes
    (mpirun and its daemons, the switch, every rank) and everything else on the machine
    shows up as foreign load."""

    NAME = "switchml-netbench"

    def __init__(self):
        self.dir, self.usage_file = None, None
        v1 = "/sys/fs/cgroup/cpuacct"
        v2 = "/sys/fs/cgroup"
        try:
            if os.path.isdir(v1):
                self.dir = os.path.join(v1, self.NAME)
                os.makedirs(self.dir, exist_ok=True)
                self.usage_file, self.scale = os.path.join(self.dir, "cpuacct.usage"), 1e-9
            elif os.path.exists(os.path.join(v2, "cgroup.controllers")):
                self.dir = os.path.join(v2, self.NAME)
                os.makedirs(self.dir, exist_ok=True)
                self.usage_file, self.scale = os.path.join(self.dir, "cpu.stat"), 1e-6
        except OSError as e:
            log(f"no CPU cgroup ({e}); CPU is counted per process only")
            self.dir = None

    def wrap(self, argv):
        """argv, started inside the group (the shell joins it, then execs)."""
        if not self.dir:
            return argv
        procs = os.path.join(self.dir, "cgroup.procs")
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', procs] + argv

    def usage(self):
        """CPU seconds used by the group so far."""
        if not self.usage_file:
            return 0.0
        with open(self.usage_file) as f:
            text = f.read()
        if self.usage_file.endswith("cpu.stat"):
            for line in text.splitlines():
                k, _, v = line.partition(" ")
                if k == "usage_usec":
                    return int(v) * self.scale
            return 0.0
        return int(text) * self.scale

    def remove(self):
        if self.dir:
            try:
                os.rmdir(self.dir)
            except OSError:
                pass


class Sampler(threading.Thread):
    """Samples, every `period` seconds: host CPU by kind, the benchmark's own CPU (its
    cgroup, and this driver), and every worker link's byte counters."""

    def __init__(self, workers, group, period=0.02):
        super().__init__(daemon=True)
        self.period = period
        self.group = group
        self.workers = workers
        self.anchors = [
            subprocess.Popen(["ip", "netns", "exec", worker_ns(r), "sleep", "infinity"])
            for r in range(workers)
        ]
        self.times, self.values = [], []
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.hz = os.sysconf("SC_CLK_TCK")

    def sample(self):
        t = time.time()
        task, irq, idle, steal = read_cpu()
        me = resource.getrusage(resource.RUSAGE_SELF)
        v = [task / self.hz, irq / self.hz, idle / self.hz, steal / self.hz,
             self.group.usage(), me.ru_utime + me.ru_stime]
        for a in self.anchors:
            try:
                v.extend(read_link(a.pid))
            except OSError:
                v.extend((0, 0))
        return t, v

    def run(self):
        time.sleep(0.2)  # let the anchors enter their namespaces
        while not self.stopped.is_set():
            t, v = self.sample()
            with self.lock:
                self.times.append(t)
                self.values.append(v)
            time.sleep(self.period)

    def stop(self):
        self.stopped.set()
        for a in self.anchors:
            a.kill()
            a.wait()

    def at(self, t):
        """The sample values interpolated at time t, or None outside the samples."""
        with self.lock:
            i = bisect.bisect_left(self.times, t)
            if i == 0 or i >= len(self.times):
                return None
            t0, t1 = self.times[i - 1], self.times[i]
            a, b = self.values[i - 1], self.values[i]
        f = 0.0 if t1 == t0 else (t - t0) / (t1 - t0)
        return [x + (y - x) * f for x, y in zip(a, b)]

    def window(self, start, end, workers):
        """What happened between two Unix times (waits for the sample after `end`)."""
        deadline = time.time() + 1.0
        while time.time() < deadline:
            with self.lock:
                last = self.times[-1] if self.times else 0
            if last > end:
                break
            time.sleep(self.period)
        a, b = self.at(start), self.at(end)
        if a is None or b is None:
            return {}
        d = [y - x for x, y in zip(a, b)]
        task, irq, idle, steal, ours, harness = d[:6]
        total = task + irq + idle + steal
        links = d[6:]
        if total <= 0:
            return {}
        return {
            "host_util": (task + irq + steal) / total,
            "host_cpu_seconds": task + irq,
            "softirq_cpu_seconds": irq,
            "group_cpu_seconds": ours if self.group.usage_file else None,
            # Tasks that are neither the benchmark's processes nor this driver.
            "foreign_cpu_seconds": max(0.0, task - ours - harness) if self.group.usage_file else None,
            "link_up_bytes": links[0:2 * workers:2],
            "link_down_bytes": links[1:2 * workers:2],
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
        LIVE.add(self)

    def poll(self):
        if self.code is not None:
            return True
        pid, status, ru = os.wait4(self.p.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.code = os.waitstatus_to_exitcode(status)
        LIVE.discard(self)
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
        self.group = CpuGroup()
        self.shapes = {}

    def proc(self, argv, tag, env=None):
        return Proc(self.group.wrap(argv), tag, self.tmp, env=env)

    def tag(self, name):
        self.seq += 1
        return f"{self.seq:05d}-{name}"

    def budget(self, p, size):
        """A generous time limit for one all-reduce of `size` bytes over P ranks."""
        ring = 2 * (p - 1) / p * size * 8 / self.rate_bps
        return 30 + 20 * ring

    def window(self):
        """Slots per lane: --window, or in proportion to the line rate (128 at 100 Mbit/s),
        which keeps the round trip, and so the timeout that suits it, the same at every
        rate, and the queue a window builds within tbf's limit."""
        if self.a.window != "auto":
            return int(self.a.window)
        return max(32, min(1024, round(128 * self.rate_bps / 100e6)))

    def switchml(self, p, sizes):
        rows = []
        for size in sizes:
            rows.append(self.switchml_one(p, size))
        return rows

    def switchml_one(self, p, size):
        a = self.a
        window = self.window()
        slots = a.lanes * window
        sw = self.proc(["ip", "netns", "exec", "nb-sw", a.switchml, "switch", "--bind",
                   f"{SWITCH_IP}:{SWITCH_PORT}", "--job", f"0:{p}:{slots}:none", "--json"],
                  self.tag(f"switch-p{p}-{size}"))
        row = {"system": "switchml", "bytes": size, "world": p, "window": window}
        if not wait_for_line(sw, "listening", 10):
            sw.kill()
            wait_all([sw], 5)
            return {**row, "error": f"switch did not start: {sw.stderr_tail()}"}
        workers = [
            self.proc(["ip", "netns", "exec", worker_ns(r), a.switchml, "worker",
                  "--switch", f"{SWITCH_IP}:{SWITCH_PORT}", "--job", "0",
                  "--rank", str(r), "--world", str(p), "--elements", str(size // 4),
                  "--iterations", "1", "--count", str(a.count), "--window", str(window),
                  "--lanes", str(a.lanes), "--rto-ms", str(a.rto_ms),
                  "--retries", str(a.retries), "--coalesce-us", str(a.coalesce_us), "--json"],
                 self.tag(f"worker{r}-p{p}-{size}"))
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
        sc = counters
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
            "probes": sum(r.get("probes", 0) for r in rs),
            # Datagrams lost [up, down], from both ends' counts: the testbed's nft counters
            # count packets as the veth carries them, and a UDP GSO send crosses it as one.
            "lost_datagrams": [
                sum(r.get("datagrams_sent", 0) for r in rs) - sc.get("received", 0),
                sc.get("sent", 0) - sum(r.get("datagrams_received", 0) for r in rs),
            ] if all("datagrams_sent" in r for r in rs) and sc else None,
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
            self.proc(["ip", "netns", "exec", worker_ns(r), PYTHON, os.path.join(BENCH, "gloo_rank.py"),
                  "--rank", str(r), "--world", str(p), "--master", f"{worker_ip(0)}:{self.port}",
                  "--sizes", ",".join(map(str, sizes))],
                 self.tag(f"gloo{r}-p{p}"), env=env)
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
        proc = self.proc(argv, self.tag(f"mpi-p{p}"))
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
            for attempt in range(1 + self.a.redo):
                self.wait_quiet()
                log(f"{phase}: rate {rate} loss {loss}% P={p} run {run + 1}: {system}"
                    + (f" (again, attempt {attempt + 1})" if attempt else ""))
                drops_before = self.drops()
                rows = getattr(self, system)(p, sizes)
                drops_after = self.drops()
                for row in rows:
                    row.update(phase=phase, rate=rate, rate_bps=self.rate_bps,
                               burst_bytes=self.shapes.get(rate), loss_pct=loss,
                               run=run, position=pos, attempt=attempt)
                    if "start" in row:
                        row.update(self.sampler.window(row["start"], row["end"], p))
                        foreign = row.get("foreign_cpu_seconds")
                        row["disturbed"] = bool(
                            foreign is not None
                            and foreign > FOREIGN_SHARE * row["seconds"] + FOREIGN_SLACK)
                    if loss > 0:
                        row["injected_drops_run"] = [b - a for a, b in zip(drops_before, drops_after)]
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    self.say(system, row)
                if not any(r.get("disturbed") for r in rows):
                    break

    def say(self, system, row):
        if "error" in row:
            log(f"  {system} {row['bytes']} B: FAILED: {row['error'][:500]}")
            return
        extra = (f", {row['retransmissions']} resends, {row.get('probes', 0)} probes"
                 if system == "switchml" else "")
        if row.get("disturbed"):
            extra += f", DISTURBED by {row['foreign_cpu_seconds']:.2f} CPU-s of other load"
        log(f"  {system} {row['bytes'] >> 20} MiB: {row['seconds']:.3f} s"
            f"{'' if row['verified'] else ' WRONG RESULT'}{extra}")

    def wait_quiet(self):
        """Wait (at most --quiet-wait seconds) until other load on the machine stays below
        FOREIGN_SHARE of a core for a second."""
        deadline = time.time() + self.a.quiet_wait
        said = False
        while True:
            t0 = time.time()
            time.sleep(1.0)
            w = self.sampler.window(t0, time.time() - 0.05, 1)
            foreign = w.get("foreign_cpu_seconds")
            if foreign is None or foreign < FOREIGN_SHARE or time.time() > deadline:
                if said:
                    log("quiet enough" if foreign is not None and foreign < FOREIGN_SHARE
                        else "still busy; measuring anyway (runs are flagged)")
                return
            if not said:
                log(f"waiting for other load to stop ({foreign:.2f} CPU-s per second)")
                said = True

    def drops(self):
        r = subprocess.run([os.path.join(BENCH, "testbed"), "counters"], capture_output=True,
                           text=True)
        try:
            return [int(x) for x in r.stdout.split()]
        except ValueError:
            return [0, 0]

    def main(self):
        a = self.a
        self.sampler = Sampler(max(a.workers + [a.loss_workers, a.cpu_workers]), self.group)
        self.sampler.start()
        try:
            with open(a.out, "a") as out:
                out.write(json.dumps({"phase": "meta", **meta(a)}) + "\n")
                for rate in (a.rates if "sizes" in a.phases else []):
                    self.set_rate(rate)
                    self.testbed("loss", "0")
                    sizes = self.capped(a.sizes)
                    for run in range(a.runs):
                        for p in a.workers:
                            self.measure(out, "sizes", rate, 0.0, p, sizes, run)
                if a.loss and "loss" in a.phases:
                    self.set_rate(a.loss_rate)
                    for run in range(a.runs):
                        for loss in a.loss:
                            self.testbed("loss", str(loss))
                            self.measure(out, "loss", a.loss_rate, loss, a.loss_workers,
                                         [a.loss_size], run)
                    self.testbed("loss", "0")
                if a.cpu_rate and "cpu" in a.phases:
                    self.set_rate(a.cpu_rate)
                    for run in range(a.runs):
                        self.measure(out, "cpu", a.cpu_rate, 0.0, a.cpu_workers, [a.cpu_size], run)
                if "share" in a.phases:
                    self.set_rate(a.share_rate)
                    self.testbed("loss", "0")
                    share = ShareScenarios(self, log, wait_all)
                    for run in range(a.share_runs):
                        share.run(out, run, a.share_congestion)
        finally:
            for p in list(LIVE):
                p.kill()
            self.sampler.stop()
            self.group.remove()

    def capped(self, sizes):
        """The sizes whose ring bound at the largest P stays within --max-bound seconds."""
        p = max(self.a.workers)
        keep = [s for s in sizes if 2 * (p - 1) / p * s * 8 / self.rate_bps <= self.a.max_bound]
        if len(keep) < len(sizes):
            log(f"at {self.rate_bps / 1e6:g} Mbit/s, sizes above {max(keep) >> 20} MiB are left out "
                f"(their ring bound exceeds {self.a.max_bound:g} s)")
        return keep or sizes[:1]

    def set_rate(self, rate):
        self.testbed("shape", rate)
        self.rate_bps = rate_bps(rate)
        with open("/run/switchml-netbench/burst") as f:
            self.shapes[rate] = int(f.read())


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


def share_args(p):
    """The share phase's settings (bench/share_phase.py)."""
    g = p.add_argument_group("share phase")
    g.add_argument("--share-scenarios", default="tcp,jobs,incast", type=lambda s: s.split(","),
                   help="tcp: one bulk TCP flow on nb-w0's uplink; jobs: two jobs on one "
                        "switch; incast: a full window completing at once")
    g.add_argument("--share-seconds", type=float, default=60,
                   help="how long the links are shared (each scenario)")
    g.add_argument("--share-lead", type=float, default=15,
                   help="tcp: seconds the job runs alone before the TCP flow starts")
    g.add_argument("--share-bin", type=float, default=1.0, help="seconds per throughput bin")
    g.add_argument("--share-rate", default="100mbit")
    g.add_argument("--share-workers", type=int, default=4)
    g.add_argument("--share-size", type=lambda s: sizes_arg(s)[0], default="64M")
    g.add_argument("--share-runs", type=int, default=1)
    g.add_argument("--share-slots", default="",
                   help="jobs: the two jobs' slot counts, e.g. 128,64 (default: each its "
                        "lanes x window)")
    g.add_argument("--share-percent", default="",
                   help="jobs: `switchml job share` before the workers start, e.g. 1:50,2:50")
    g.add_argument("--share-congestion", default="default", type=lambda s: s.split(","),
                   help="variants run side by side: SWITCHML_CONGESTION for the workers "
                        "(`default`: unset), e.g. off,on")
    g.add_argument("--share-switch-args", default="",
                   help="extra arguments for the share phase's `switchml switch`")
    g.add_argument("--incast-window", type=int, default=256,
                   help="incast: slots per lane (256 x 1086 B exceeds tbf's 250 kB queue)")
    g.add_argument("--tcp-cc", default="cubic", help="the TCP flow's congestion control")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="JSON lines file to append to")
    p.add_argument("--switchml", required=True, help="the switchml binary")
    p.add_argument("--mpi-binary", required=True, help="the compiled mpi_allreduce")
    p.add_argument("--rates", default="50mbit,100mbit", type=lambda s: s.split(","))
    p.add_argument("--workers", default="2,3,4", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--sizes", default="1M,4M,16M,64M,256M", type=sizes_arg,
                   help="tensor sizes in bytes (suffixes K, M, G are binary)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--max-bound", type=float, default=40,
                   help="leave out sizes whose ring bound at the largest P exceeds this (s)")
    p.add_argument("--redo", type=int, default=2,
                   help="measure a system's run again, up to this often, when other load disturbed it")
    p.add_argument("--quiet-wait", type=float, default=300,
                   help="seconds to wait for other load to stop before each measurement")
    p.add_argument("--phases", default="sizes,loss,cpu", type=lambda s: s.split(","),
                   help="sizes: every rate, P and size without loss; loss: the loss sweep; "
                        "cpu: one faster link (--cpu-rate); share: switchml-rs on shared "
                        "links (bench/share_phase.py; not in the default run)")
    p.add_argument("--systems", default="switchml,gloo,mpi", type=lambda s: s.split(","))
    p.add_argument("--loss", default="0,0.01,0.1,1",
                   type=lambda s: [float(x) for x in s.split(",")] if s else [],
                   help="loss sweep, percent per link direction (empty: none)")
    p.add_argument("--loss-rate", default="100mbit")
    p.add_argument("--loss-workers", type=int, default=4)
    p.add_argument("--loss-size", type=lambda s: sizes_arg(s)[0], default="64M")
    p.add_argument("--cpu-rate", default="200mbit",
                   help="a faster link where the CPUs, not the link, may bind (empty: skip)")
    p.add_argument("--cpu-workers", type=int, default=4)
    p.add_argument("--cpu-size", type=lambda s: sizes_arg(s)[0], default="64M")
    p.add_argument("--count", type=int, default=256, help="switchml values per packet")
    p.add_argument("--window", default="auto",
                   help="switchml slots per lane (auto: 128 per 100 Mbit/s of line rate)")
    p.add_argument("--lanes", type=int, default=1, help="switchml lanes per worker")
    p.add_argument("--rto-ms", type=int, default=30,
                   help="switchml retransmission timeout floor (the first timeout)")
    p.add_argument("--retries", type=int, default=60, help="switchml timeouts of one use before giving up")
    p.add_argument("--coalesce-us", type=int, default=500,
                   help="switchml lanes let datagrams gather this long after a wake-up")
    share_args(p)
    a = p.parse_args()
    for s in a.systems:
        if s not in SYSTEMS:
            p.error(f"unknown system {s}")
    # SIGTERM (timeout, the wrapper's trap) unwinds like ^C, so children are killed.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    Bench(a).main()


if __name__ == "__main__":
    main()
