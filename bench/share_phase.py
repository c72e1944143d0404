"""The `share` phase of bench/netbench.py: switchml-rs on links it does not have to itself
(issue 29, item 1). Three scenarios on the testbed's 100 Mbit/s tail-drop links:

- `tcp`: a job of P ranks all-reduces 64 MiB tensors back to back; after --share-lead
  seconds alone, a bulk TCP flow (iperf3, --tcp-cc) from nb-w0 to the switch's namespace
  shares nb-w0's uplink for --share-seconds;
- `jobs`: two jobs of P ranks each (every worker namespace runs a rank of both) through one
  switch daemon, so that they share every uplink and downlink;
- `incast`: one job with a window of --incast-window slots a lane (every slot of a full
  window completing at once), the queues' depth and drops sampled through the run.

What each scenario records, in 1 s bins (--share-bin): each job's goodput from the switch's
own counters (`switchml job --admin PATH stats`: completions × count × 4 bytes, read every
bin), the TCP flow's from iperf3's intervals, the round trip through nb-w0's and nb-w1's
links (ping every 200 ms: its queueing delay) and every tbf queue's sent, dropped and
backlog (`tc -s qdisc`). Workers run until the scenario ends and are then killed, so this
phase does not verify sums (the other phases do); an all-reduce's time comes from the
worker's `iteration N: T s` lines, timestamped as they appear.
"""

import json
import os
import re
import signal
import subprocess
import threading
import time

SWITCH_IP = "10.77.0.254"
SWITCH_PORT = 48864
IPERF_PORT = 5201
# A job's ranks are starved, or the scenario collapsed, when a participant's goodput over
# the second half of the shared period falls below this share of its fair share.
STARVED = 0.10
ITERATION = re.compile(r"^iteration (\d+): ([0-9.]+) s$")
QDISC = re.compile(
    r"qdisc tbf \S+ dev (\S+) .*?Sent (\d+) bytes (\d+) pkt \(dropped (\d+), "
    r"overlimits (\d+) requeues \d+\)\s*backlog (\S+) (\d+)p", re.S)


def worker_ns(rank):
    return f"nb-w{rank}"


def jain(xs):
    """Jain's fairness index of the allocations xs (1: equal; 1/n: one has everything)."""
    xs = [max(0.0, x) for x in xs]
    s, q = sum(xs), sum(x * x for x in xs)
    return None if q == 0 else s * s / (len(xs) * q)


def backlog_bytes(text):
    """tc's backlog ("12Kb", "1514b", "0b") in bytes."""
    m = re.match(r"([0-9.]+)([KMG]?)b", text)
    if not m:
        return 0
    return int(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)])


def read_qdiscs(namespaces, wrap=lambda argv: argv):
    """Every tbf queue of the testbed: {"nb-sw/p0": (sent_pkts, dropped, backlog_bytes,
    backlog_pkts), "nb-w0/eth0": ...}; `wrap` puts each `tc` in the benchmark's CPU group."""
    out = {}
    for ns in namespaces:
        r = subprocess.run(wrap(["tc", "-n", ns, "-s", "qdisc", "show"]), capture_output=True,
                           text=True)
        out.update(parse_qdiscs(ns, r.stdout))
    return out


def parse_qdiscs(ns, text):
    """The tbf queues in `tc -s qdisc show`'s output for namespace `ns`."""
    out = {}
    # One block per qdisc: split before each "qdisc" line.
    for block in re.split(r"\n(?=qdisc )", text):
        m = QDISC.search(block)
        if m:
            out[f"{ns}/{m.group(1)}"] = (int(m.group(3)), int(m.group(4)),
                                         backlog_bytes(m.group(6)), int(m.group(7)))
    return out


class Watch(threading.Thread):
    """Every `period` seconds: the switch's per-job completions (admin `stats`), every
    worker's new `iteration` lines, and every tbf queue."""

    def __init__(self, switchml, admin, workers, namespaces, period, wrap):
        super().__init__(daemon=True)
        # Its own commands count as the benchmark's CPU, not as other load.
        self.wrap = wrap
        self.switchml, self.admin, self.period = switchml, admin, period
        self.workers = workers  # {(job, rank): Proc}
        self.namespaces = namespaces
        self.samples = []  # (t, {job: completions}, {queue: (...)})
        self.iterations = {k: [] for k in workers}  # (t_seen, n, seconds)
        self.seen = {k: 0 for k in workers}
        self.stopped = threading.Event()

    def completions(self):
        r = subprocess.run(self.wrap([self.switchml, "job", "--admin", self.admin, "stats"]),
                           capture_output=True, text=True, timeout=10)
        got = {}
        for line in r.stdout.splitlines():
            m = re.match(r'switchml_job_completions_total\{job="(\d+)"\} (\d+)', line)
            if m:
                got[int(m.group(1))] = int(m.group(2))
        return got

    def run(self):
        while not self.stopped.is_set():
            t = time.time()
            try:
                done = self.completions()
            except subprocess.TimeoutExpired:
                done = {}
            queues = read_qdiscs(self.namespaces, self.wrap)
            self.samples.append((t, done, queues))
            for key, proc in self.workers.items():
                try:
                    lines = proc.stdout().splitlines()
                except OSError:
                    continue
                for line in lines[self.seen[key]:]:
                    m = ITERATION.match(line.strip())
                    if m:
                        self.iterations[key].append((t, int(m.group(1)), float(m.group(2))))
                self.seen[key] = len(lines)
            self.stopped.wait(max(0.0, self.period - (time.time() - t)))

    def stop(self):
        self.stopped.set()
        self.join(timeout=30)


class Ping:
    """`ping -D -i 0.2` from a worker namespace to the switch: round trips through both
    of that worker's tbf queues."""

    def __init__(self, bench, rank):
        self.rank = rank
        self.proc = bench.proc(["ip", "netns", "exec", worker_ns(rank), "ping", "-D", "-n",
                                "-i", "0.2", SWITCH_IP], bench.tag(f"ping{rank}"))

    def samples(self):
        """[(unix_time, rtt_ms or None for a lost probe)] once stopped."""
        self.proc.kill(signal.SIGINT)
        deadline = time.time() + 3
        while not self.proc.poll() and time.time() < deadline:
            time.sleep(0.05)
        out, sent = [], None
        for line in self.proc.stdout().splitlines():
            m = re.match(r"\[([0-9.]+)\].*icmp_seq=(\d+).* time=([0-9.]+) ms", line)
            if m:
                out.append((float(m.group(1)), float(m.group(3))))
            m = re.match(r"(\d+) packets transmitted, (\d+) received", line)
            if m:
                sent = (int(m.group(1)), int(m.group(2)))
        return out, sent


class ShareScenarios:
    """The three scenarios; `bench` is netbench's Bench (processes, tags, arguments)."""

    def __init__(self, bench, log, wait_all):
        self.b = bench
        self.a = bench.a
        self.log = log
        self.wait_all = wait_all
        self.switch_counters = {}

    # ------------------------------------------------------------ pieces

    def switch(self, jobs, admin, tag, extra=()):
        """A switch daemon in nb-sw serving `jobs` [(id, world, slots)], with an admin socket."""
        argv = ["ip", "netns", "exec", "nb-sw", self.a.switchml, "switch", "--bind",
                f"{SWITCH_IP}:{SWITCH_PORT}", "--threads", "1", "--admin", admin, "--json"]
        for job, world, slots in jobs:
            argv += ["--job", f"{job}:{world}:{slots}:none"]
        argv += list(extra) + self.a.share_switch_args.split()
        sw = self.b.proc(argv, self.b.tag(tag))
        if not wait_for(lambda: "listening" in sw.stdout() and os.path.exists(admin), sw, 10):
            sw.kill()
            return None, f"switch did not start: {sw.stderr_tail()}"
        return sw, None

    def workers(self, job, p, window, tag, env_extra=None):
        a = self.a
        env = dict(os.environ, **(env_extra or {}))
        return {
            (job, r): self.b.proc(
                ["ip", "netns", "exec", worker_ns(r), a.switchml, "worker",
                 "--switch", f"{SWITCH_IP}:{SWITCH_PORT}", "--job", str(job),
                 "--rank", str(r), "--world", str(p), "--elements", str(a.share_size // 4),
                 "--iterations", "100000", "--count", str(a.count), "--window", str(window),
                 "--lanes", str(a.lanes), "--rto-ms", str(a.rto_ms),
                 "--retries", str(a.retries), "--coalesce-us", str(a.coalesce_us)],
                self.b.tag(f"{tag}-job{job}-rank{r}"), env=env)
            for r in range(p)
        }

    def stop(self, procs):
        for p in procs:
            p.kill(signal.SIGKILL)
        for p in procs:
            while not p.poll():
                time.sleep(0.02)

    # ------------------------------------------------------------ scenarios

    def run(self, out, run, variants):
        """Every scenario of --share-scenarios once per variant, the variants of a scenario
        back to back (so that they see the same machine), writing a row each. A variant is
        the workers' SWITCHML_CONGESTION (`default`: unset)."""
        for scenario in self.a.share_scenarios:
            for variant in variants:
                self.one(out, run, scenario, variant)

    def one(self, out, run, scenario, variant):
        """One scenario, one variant: measure, flag other load, write the row."""
        env = {} if variant == "default" else {"SWITCHML_CONGESTION": variant}
        self.b.wait_quiet()
        self.log(f"share: {scenario} ({variant}) run {run + 1}")
        row = getattr(self, scenario)(env)
        if "start" in row:
            row.update(self.b.sampler.window(row["start"], row["end"], self.a.share_workers))
            foreign = row.get("foreign_cpu_seconds")
            row["disturbed"] = bool(foreign is not None and
                                    foreign > 0.10 * (row["end"] - row["start"]))
        row.update(phase="share", scenario=scenario, variant=variant, run=run,
                   rate=self.a.share_rate, rate_bps=self.b.rate_bps, world=self.a.share_workers,
                   bytes=self.a.share_size, bin_seconds=self.a.share_bin,
                   seconds_shared=self.a.share_seconds, lead_seconds=self.lead(scenario))
        out.write(json.dumps(row) + "\n")
        out.flush()
        self.say(row)

    def lead(self, scenario):
        return self.a.share_lead if scenario == "tcp" else 0.0

    def tcp(self, env):
        a = self.a
        p, window = a.share_workers, self.b.window()
        admin = os.path.join(self.b.tmp, f"admin-{self.b.seq}.sock")
        sw, err = self.switch([(1, p, a.lanes * window)], admin, "share-tcp-switch")
        if err:
            return {"error": err}
        server = self.b.proc(["ip", "netns", "exec", "nb-sw", "iperf3", "-s", "-1", "-p",
                              str(IPERF_PORT)], self.b.tag("iperf3-server"))
        workers = self.workers(1, p, window, "share-tcp", env)
        pings, watch = self.start_watching(admin, workers, a.share_bin)
        t0 = time.time()
        time.sleep(a.share_lead)
        t_tcp = time.time()
        client = self.b.proc(["ip", "netns", "exec", worker_ns(0), "iperf3", "-c", SWITCH_IP,
                              "-p", str(IPERF_PORT), "-t", str(a.share_seconds), "-i",
                              str(a.share_bin), "-C", a.tcp_cc, "--json"],
                             self.b.tag("iperf3-client"))
        finished = self.wait_all([client], a.share_seconds + 30)
        t_end = time.time()
        rtts = self.finish(sw, watch, pings, list(workers.values()) + [server])
        tcp = iperf_bins(client, t_tcp) if finished else {"error": client.stderr_tail()}
        return self.summarise(watch, [1], rtts, t0, t_tcp, t_end, tcp=tcp,
                              failed=self.failures(workers))

    def jobs(self, env):
        a = self.a
        p, window = a.share_workers, self.b.window()
        admin = os.path.join(self.b.tmp, f"admin-{self.b.seq}.sock")
        slots = [int(x) for x in a.share_slots.split(",")] if a.share_slots else [a.lanes * window] * 2
        sw, err = self.switch([(1, p, slots[0]), (2, p, slots[1])], admin, "share-jobs-switch",
                              ["--spare-slots", "0"])
        if err:
            return {"error": err}
        # Shares are of the pool, which is the two jobs' slots (--spare-slots 0): each
        # job's new range sets its workers' window.
        for share in a.share_percent.split(",") if a.share_percent else []:
            jid, pct = share.split(":")
            r = subprocess.run([a.switchml, "job", "--admin", admin, "share", jid, pct],
                               capture_output=True, text=True)
            self.log(f"  job {jid}: share {pct}%: {(r.stdout or r.stderr).strip()}")
            m = re.search(r"slots (\d+)\.\.(\d+)", r.stdout)
            if m:
                slots[int(jid) - 1] = int(m.group(2)) - int(m.group(1))
        workers = {}
        for job, s in zip((1, 2), slots):
            workers.update(self.workers(job, p, s // a.lanes, "share-jobs", env))
        watch, rtts, t0, t_end = self.observe(sw, admin, workers, a.share_bin)
        return self.summarise(watch, [1, 2], rtts, t0, t0, t_end, failed=self.failures(workers),
                              slots=slots)

    def incast(self, env):
        a = self.a
        p, window = a.share_workers, a.incast_window
        admin = os.path.join(self.b.tmp, f"admin-{self.b.seq}.sock")
        sw, err = self.switch([(1, p, a.lanes * window)], admin, "share-incast-switch")
        if err:
            return {"error": err}
        workers = self.workers(1, p, window, "share-incast", env)
        # Queues sampled four times a bin: a full window drains in about 20 ms.
        watch, rtts, t0, t_end = self.observe(sw, admin, workers, a.share_bin / 4)
        return self.summarise(watch, [1], rtts, t0, t0, t_end, failed=self.failures(workers),
                              window=window)

    def observe(self, sw, admin, workers, period):
        """Watch `workers` for --share-seconds, then stop everything; return the watch, the
        pings' samples and the period's start and end."""
        pings, watch = self.start_watching(admin, workers, period)
        t0 = time.time()
        time.sleep(self.a.share_seconds)
        t_end = time.time()
        rtts = self.finish(sw, watch, pings, list(workers.values()))
        return watch, rtts, t0, t_end

    def start_watching(self, admin, workers, period):
        pings = [Ping(self.b, 0), Ping(self.b, 1)]
        namespaces = ["nb-sw"] + [worker_ns(r) for r in range(self.a.share_workers)]
        watch = Watch(self.a.switchml, admin, workers, namespaces, period, self.b.group.wrap)
        watch.start()
        return pings, watch

    def finish(self, sw, watch, pings, procs):
        """Stop the watch, the pings, `procs` and the switch; return the pings' samples."""
        watch.stop()
        rtts = [pg.samples() for pg in pings]
        self.stop(procs + [pg.proc for pg in pings])
        sw.kill(signal.SIGINT)
        self.wait_all([sw], 10)
        counters = next((x["counters"] for x in sw.json_lines() if "counters" in x), {})
        self.switch_counters = {k: counters.get(k) for k in
                                ("received", "sent", "congested_batches", "results_marked")
                                if k in counters}
        return rtts

    def failures(self, workers):
        """Ranks that ended on their own before the scenario did (an error), with why."""
        return {f"{j}/{r}": f"exit {w.code}: {w.stderr_tail()}"
                for (j, r), w in workers.items() if w.code not in (None, -9)}

    # ------------------------------------------------------------ summary

    def summarise(self, watch, jobs, rtts, t0, t_shared, t_end, tcp=None, failed=None, **extra):
        a = self.a
        rate = self.b.rate_bps
        bin_s = a.share_bin
        k_bytes = 4 * a.count
        samples = watch.samples
        # Goodput per job per bin: completions between consecutive samples.
        series = {str(j): [] for j in jobs}
        for (ta, da, _), (tb, db, _) in zip(samples, samples[1:]):
            for j in jobs:
                if j in da and j in db and tb > ta:
                    series[str(j)].append(
                        (round(tb - t0, 3), (db[j] - da[j]) * k_bytes * 8 / (tb - ta)))
        if tcp and "bins" in tcp:
            series["tcp"] = [(round(t - t0, 3), bps) for t, bps in tcp["bins"]]
        shared = (t_shared - t0 + 2.0, t_end - t0)  # the first 2 s of sharing left out
        half = ((shared[0] + shared[1]) / 2, shared[1])

        def mean(xs, lo, hi):
            v = [bps for t, bps in xs if lo < t <= hi]
            return sum(v) / len(v) if v else None
        goodput = {name: mean(s, *shared) for name, s in series.items()}
        late = {name: mean(s, *half) for name, s in series.items()}
        alone = {str(j): mean(series[str(j)], 2.0, t_shared - t0) for j in jobs} \
            if t_shared - t0 > 4 else {}
        fair = rate / max(1, len(series))
        starved = [n for n, v in late.items() if v is None or v < STARVED * fair * 0.94]
        # Queues: drops and packets over the run, per direction.
        q0, q1 = samples[0][2] if samples else {}, samples[-1][2] if samples else {}

        def delta(pred):
            sent = sum(q1[q][0] - q0.get(q, (0, 0))[0] for q in q1 if pred(q))
            drop = sum(q1[q][1] - q0.get(q, (0, 0, 0, 0))[1] for q in q1 if pred(q))
            return sent, drop
        up_sent, up_drop = delta(lambda q: q.endswith("/eth0"))
        down_sent, down_drop = delta(lambda q: q.startswith("nb-sw/"))
        # Steady state: drops after the first 5 s of the run.
        steady = [s for s in samples if s[0] - t0 >= 5.0]
        if len(steady) >= 2:
            s0, s1 = steady[0][2], steady[-1][2]
            st_sent = sum(s1[q][0] - s0.get(q, (0,))[0] for q in s1 if q.startswith("nb-sw/"))
            st_drop = sum(s1[q][1] - s0.get(q, (0, 0))[1] for q in s1 if q.startswith("nb-sw/"))
        else:
            st_sent = st_drop = 0
        backlog = {q: max((s[2].get(q, (0, 0, 0, 0))[2] for s in samples), default=0)
                   for q in q1}
        # All-reduce times per job (rank 0's): iterations that ended inside the shared period,
        # and alone. (`tt` is when the line was seen: up to one bin after the iteration ended.)
        shared_iters, alone_iters = {}, {}
        for (job, rank), its in watch.iterations.items():
            if rank != 0:
                continue
            done = [(tt - t0, sec) for tt, _, sec in its]
            shared_iters[str(job)] = [s for tt, s in done if shared[0] + s <= tt <= shared[1] + bin_s]
            alone_iters[str(job)] = [s for tt, s in done if tt - bin_s <= t_shared - t0]
        row = {
            "series_bps": series,
            "goodput_bps": goodput,
            "goodput_late_bps": late,
            "goodput_alone_bps": alone,
            "jain": jain([v for v in goodput.values() if v is not None])
            if len(goodput) > 1 else None,
            "starved": starved,
            "collapse": bool(starved or failed),
            "failed": failed or {},
            "allreduce_seconds_shared": shared_iters,
            "allreduce_seconds_alone": alone_iters,
            "qdisc": {"up_sent": up_sent, "up_dropped": up_drop, "down_sent": down_sent,
                      "down_dropped": down_drop, "down_steady_sent": st_sent,
                      "down_steady_dropped": st_drop, "max_backlog_bytes": backlog},
            "backlog_series": {q: [(round(s[0] - t0, 3), s[2][q][2]) for s in samples if q in s[2]]
                               for q in q1 if q.startswith("nb-sw/")},
            "rtt": [{"rank": i, "ms": [(round(t - t0, 3), ms) for t, ms in pts],
                     "sent_received": sr} for i, (pts, sr) in enumerate(rtts)],
            "tcp": {k: v for k, v in (tcp or {}).items() if k != "bins"} if tcp else None,
            "switch_counters": self.switch_counters,
            "start": t0,
            "end": t_end,
            **extra,
        }
        return row

    def say(self, row):
        if "error" in row:
            self.log(f"  FAILED: {row['error'][:400]}")
            return
        g = ", ".join(f"{n} {v / 1e6:.1f} Mbit/s" for n, v in row["goodput_bps"].items()
                      if v is not None)
        q = row["qdisc"]
        self.log(f"  goodput {g}; jain {row['jain']}; drops up {q['up_dropped']} down "
                   f"{q['down_dropped']}; collapse {row['collapse']}")


def iperf_bins(client, t_start):
    """iperf3's 1 s intervals as [(unix_end, bits_per_second)] plus its totals."""
    try:
        d = json.loads(client.stdout())
    except json.JSONDecodeError:
        return {"error": f"iperf3: no JSON: {client.stderr_tail()}"}
    bins = [(t_start + iv["sum"]["end"], iv["sum"]["bits_per_second"])
            for iv in d.get("intervals", [])]
    end = d.get("end", {})
    return {"bins": bins,
            "retransmits": end.get("sum_sent", {}).get("retransmits"),
            "sent_bps": end.get("sum_sent", {}).get("bits_per_second"),
            "received_bps": end.get("sum_received", {}).get("bits_per_second"),
            "congestion": end.get("sender_tcp_congestion")}


def wait_for(cond, proc, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        if proc.poll():
            return False
        time.sleep(0.02)
    return False
