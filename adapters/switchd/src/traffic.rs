//! The daemon's counters: what it received and sent, what it refused before the switch saw
//! it (oversized datagrams, bad sources, injected losses), and a copy of the switch's own
//! counters (drops by reason, per-job contributions, completions, unauthorized messages…).

use switchml_core::switch::{Counters, JobCounters, Transmit};

/// Counters of one job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobTraffic {
    /// The job id.
    pub job: u16,
    /// Datagrams received naming this job.
    pub received: u64,
    /// Answers sent back to the sender (resent results, join and probe replies, refusals).
    pub replies: u64,
    /// Multicasts (completed uses, join completion, aborts passed on).
    pub multicasts: u64,
    /// Datagrams sent to this job's lanes, replicas included, and to its parent.
    pub sent: u64,
    /// Datagrams sent up to the parent switch (a child's job, protocol.md §7).
    pub upward: u64,
    /// Datagrams received from the parent switch (a child's job).
    pub from_parent: u64,
    /// The switch's counters of the job.
    pub switch: JobCounters,
}

impl JobTraffic {
    /// The daemon's own counters of a job (before the switch's), as `(name, help)`, in the
    /// order of [`JobTraffic::named`]; names are the JSON keys and the metric names' stems.
    pub const DAEMON_COUNTERS: [(&'static str, &'static str); 6] = [
        ("received", "Datagrams received naming this job"),
        ("replies", "Answers sent back to one sender"),
        (
            "multicasts",
            "Multicasts: completed uses, join completion, aborts passed on",
        ),
        (
            "sent",
            "Datagrams sent to this job's lanes, replicas included, and to its parent",
        ),
        ("upward", "Datagrams sent up to the parent switch"),
        ("from_parent", "Datagrams received from the parent switch"),
    ];

    /// Return every counter of the job as `(name, value)`: the daemon's
    /// ([`JobTraffic::DAEMON_COUNTERS`]), then the switch's (`JobCounters::NAMES`).
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> {
        let own = [
            self.received,
            self.replies,
            self.multicasts,
            self.sent,
            self.upward,
            self.from_parent,
        ];
        let names = Self::DAEMON_COUNTERS.map(|(name, _)| name);
        names.into_iter().zip(own).chain(self.switch.named())
    }

    /// Count what the endpoint decided for one datagram of this job.
    pub fn count(&mut self, t: &Transmit) {
        match t {
            Transmit::Nothing => {}
            Transmit::Reply { .. } => self.replies += 1,
            Transmit::Lanes { up: true, .. } => self.upward += 1,
            Transmit::Lanes { .. } => self.multicasts += 1,
        }
    }
}

/// Switch-wide counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaemonCounters {
    /// Datagrams received.
    pub received: u64,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams the kernel refused to send (each counted, none fatal).
    pub send_failures: u64,
    /// Dropped by the loss injector (either direction).
    pub injected_losses: u64,
    /// Longer than any valid message (cut by the receive buffer), dropped.
    pub oversized: u64,
    /// From a source no answer can go to (port 0, unspecified, multicast, broadcast).
    pub bad_source: u64,
    /// Receive errors that were not the socket's own (counted, not fatal).
    pub recv_errors: u64,
    /// Runs released after being idle.
    pub expired_runs: u64,
    /// Joins sent on to their lane's shard (Abort `WrongShard`, protocol.md §1.1).
    pub redirected: u64,
    /// Joins and Statuses answered with a Cookie (protocol.md §4.2), before the switch.
    pub cookies: u64,
    /// Datagrams naming a job this switch does not serve (issue 25: a Join or Probe of
    /// one is answered with Abort `UnknownJob`, and was counted nowhere else).
    pub unknown_job: u64,
    /// Datagrams dropped on receive, unread, because their source had sent more that
    /// failed authentication than its bucket allows (`source_limit`).
    pub throttled: u64,
    /// Answers that needed no session (Status replies, refusals) not sent because their
    /// destination had had its share (`source_limit`).
    pub replies_limited: u64,
    /// Status messages dropped unanswered because the daemon runs with `--status off`.
    pub status_off: u64,
    /// Of `received`, the datagrams that came as AF_XDP frames (`--io xdp`).
    pub xdp_received: u64,
    /// Of `sent`, the datagrams that went as AF_XDP frames (`--io xdp`).
    pub xdp_sent: u64,
    /// Batches handled while the socket's send backlog was above `--mark-backlog`
    /// (`backlog_mark`): the switch marked what it counted in them.
    pub congested_batches: u64,
    /// Results multicast with the `CONGESTED` mark (protocol.md §6.3): uses the switch
    /// counted a Contribution of while marking.
    pub results_marked: u64,
    /// CPU time (user + system) of the daemon's threads, one per shard.
    pub cpu: std::time::Duration,
    /// The switch's counters: drops by reason (these two classes included), verdicts.
    pub switch: Counters,
    /// Per registered job.
    pub jobs: Vec<JobTraffic>,
}

impl DaemonCounters {
    /// The switch-wide counters of the daemon, as `(name, help)`, in the order of
    /// [`DaemonCounters::named`]: the one list that reports, the admin socket's `stats`
    /// and the metrics endpoint follow.
    pub const COUNTERS: [(&'static str, &'static str); 18] = [
        ("received", "Datagrams received"),
        ("sent", "Datagrams sent"),
        ("send_failures", "Datagrams the kernel refused to send"),
        ("bad_source", "Datagrams from a source no answer can go to"),
        (
            "recv_errors",
            "Receive errors that were not the socket's own",
        ),
        ("injected_losses", "Datagrams dropped by the loss injector"),
        ("oversized", "Datagrams longer than any message"),
        ("expired_runs", "Runs released after being idle"),
        ("redirected", "Joins sent on to their lane's shard"),
        ("cookies", "Joins and Statuses answered with a Cookie"),
        (
            "unknown_job",
            "Datagrams naming a job this switch does not serve",
        ),
        (
            "throttled",
            "Datagrams dropped unread: their source failed authentication too often",
        ),
        (
            "replies_limited",
            "Answers to strangers not sent: their destination had its share",
        ),
        ("status_off", "Status messages unanswered (--status off)"),
        ("xdp_received", "Datagrams received as AF_XDP frames"),
        ("xdp_sent", "Datagrams sent as AF_XDP frames"),
        (
            "congested_batches",
            "Batches handled while the send backlog was above --mark-backlog",
        ),
        (
            "results_marked",
            "Results multicast with the CONGESTED mark",
        ),
    ];

    /// Return the switch-wide counters as `(name, value)`, in the order of
    /// [`DaemonCounters::COUNTERS`] (drops by reason and per-job counters are apart).
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> {
        let values = [
            self.received,
            self.sent,
            self.send_failures,
            self.bad_source,
            self.recv_errors,
            self.injected_losses,
            self.oversized,
            self.expired_runs,
            self.redirected,
            self.cookies,
            self.unknown_job,
            self.throttled,
            self.replies_limited,
            self.status_off,
            self.xdp_received,
            self.xdp_sent,
            self.congested_batches,
            self.results_marked,
        ];
        Self::COUNTERS.map(|(name, _)| name).into_iter().zip(values)
    }

    /// Return every drop the switch counted (every class, these two included).
    pub fn total_drops(&self) -> u64 {
        self.switch.total_drops()
    }

    /// Return the counters of job `id`.
    pub fn job(&self, id: u16) -> Option<&JobTraffic> {
        self.jobs.iter().find(|j| j.job == id)
    }

    /// Add another shard's counters to these (protocol.md §1.1): every count adds up,
    /// job by job.
    pub fn add(&mut self, o: &DaemonCounters) {
        let DaemonCounters {
            received,
            sent,
            send_failures,
            injected_losses,
            oversized,
            bad_source,
            recv_errors,
            expired_runs,
            redirected,
            cookies,
            unknown_job,
            throttled,
            replies_limited,
            status_off,
            xdp_received,
            xdp_sent,
            congested_batches,
            results_marked,
            cpu,
            switch,
            jobs,
        } = o;
        self.cpu += *cpu;
        self.received += received;
        self.sent += sent;
        self.send_failures += send_failures;
        self.injected_losses += injected_losses;
        self.oversized += oversized;
        self.bad_source += bad_source;
        self.recv_errors += recv_errors;
        self.expired_runs += expired_runs;
        self.redirected += redirected;
        self.cookies += cookies;
        self.unknown_job += unknown_job;
        self.throttled += throttled;
        self.replies_limited += replies_limited;
        self.status_off += status_off;
        self.xdp_received += xdp_received;
        self.xdp_sent += xdp_sent;
        self.congested_batches += congested_batches;
        self.results_marked += results_marked;
        self.switch += switch;
        for j in jobs {
            match self.jobs.iter_mut().find(|m| m.job == j.job) {
                Some(m) => {
                    m.received += j.received;
                    m.replies += j.replies;
                    m.multicasts += j.multicasts;
                    m.sent += j.sent;
                    m.upward += j.upward;
                    m.from_parent += j.from_parent;
                    m.switch += &j.switch;
                }
                None => self.jobs.push(*j),
            }
        }
    }
}

/// Where each shard publishes its counters (at most every 50 ms, off the packet path) and
/// where the owner, the admin socket's `stats` and the metrics endpoint read them.
#[derive(Debug, Clone)]
pub(crate) struct CounterBoard(std::sync::Arc<[std::sync::Mutex<DaemonCounters>]>);

impl CounterBoard {
    /// A board for `shards` shards, every count zero.
    pub(crate) fn new(shards: usize) -> CounterBoard {
        CounterBoard((0..shards).map(|_| Default::default()).collect())
    }

    /// Publish shard `index`'s counters.
    pub(crate) fn publish(&self, index: usize, counters: DaemonCounters) {
        if let Some(Ok(mut c)) = self.0.get(index).map(|m| m.lock()) {
            *c = counters;
        }
    }

    /// Return each shard's counters as last published.
    pub(crate) fn shards(&self) -> Vec<DaemonCounters> {
        let read =
            |m: &std::sync::Mutex<DaemonCounters>| m.lock().map(|c| c.clone()).unwrap_or_default();
        self.0.iter().map(read).collect()
    }

    /// Return every shard's counters added up.
    pub(crate) fn total(&self) -> DaemonCounters {
        let mut total = DaemonCounters::default();
        for c in self.shards() {
            total.add(&c);
        }
        total
    }
}
