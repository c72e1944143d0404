//! The daemon around a switch, on its own thread: what the `switchml switch` command, the
//! demo and the tests start. The switch is the core's reference [`Switch`] or the P4
//! model's [`Pipeline`] ([`SwitchPipeline`]); the daemon, the lane learning, idle expiry,
//! shutdown and the admin socket are the same for both.
//!
//! The pool and the switch live on the daemon thread (the switch borrows its pool), jobs
//! are laid out one after another in the pool, and a new epoch is drawn at every start, so
//! that workers of a restarted switch learn that it lost their job.
//!
//! With several shards (`SwitchConfig::shards`, protocol.md §1.1) each is a daemon thread
//! of its own, on consecutive ports from [`RunningSwitch::addr`]'s, with its own switch and
//! pool holding every job ([`crate::shards`]).
//!
//! Served by the daemon, the P4 model answers Status with real counters: every datagram
//! the daemon hands it or drops before it (oversized, bad source) is counted in the
//! model's own drop and job counters, as the reference counts them. What is not real on
//! that path: the model only emulates the hardware's passes (no timing, no interleaving),
//! a bare datagram is classified by its rank field rather than its addresses (the
//! endpoint routes answers by the addresses it learned), and on a Tofino the P4 programs
//! leave the StatusReply's counters zero (`p4/model/src/status_handler.rs`).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use switchml_core::shard::Shard;
use switchml_core::switch::{ControlPlane, Slot};
use switchml_p4model::{Config as ModelConfig, Pipeline, SwitchAddr};

use crate::admin::AdminSocket;
use crate::daemon::{Daemon, JobPlace, SoftEndpoint, SoftSwitch, MAX_COUNT, MAX_JOBS, RANK_WORDS};
use crate::job::{key_from_env, JobSpec};
use crate::metrics::MetricsEndpoint;
use crate::shards::{bind_shards, AdminRole};
use crate::traffic::{CounterBoard, DaemonCounters};
use crate::tree::ChildSpec;

use switchml_xdp::{Attached, Io};

/// Which switch the daemon runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SwitchPipeline {
    /// The core's reference switch (`switchml_core::switch::Switch`): up to
    /// 1,024 values a packet and 256 ranks a job.
    #[default]
    Reference,
    /// The P4 model (`switchml_p4model::Pipeline`), the Rust twin of the P4 programs: up to
    /// [`switchml_p4model::MAX_COUNT`] values a packet and 64 ranks a job.
    P4Model,
}

impl SwitchPipeline {
    /// Both, in `--pipeline` order.
    pub const ALL: [SwitchPipeline; 2] = [SwitchPipeline::Reference, SwitchPipeline::P4Model];

    /// Return its `--pipeline` name.
    pub const fn name(self) -> &'static str {
        match self {
            SwitchPipeline::Reference => "reference",
            SwitchPipeline::P4Model => "p4-model",
        }
    }
}

impl std::fmt::Display for SwitchPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SwitchPipeline {
    type Err = String;

    fn from_str(s: &str) -> Result<SwitchPipeline, String> {
        SwitchPipeline::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("pipeline {s:?}: expected reference or p4-model"))
    }
}

/// How to start a software switch.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchConfig {
    /// Where to listen (port 0: any free port).
    pub bind: SocketAddr,
    /// The jobs to serve.
    pub jobs: Vec<JobSpec>,
    /// Probability of losing each datagram, each way.
    pub drop_rate: f64,
    /// Seed of the loss injector.
    pub seed: u64,
    /// How long a job's run may go unheard before the switch releases it.
    pub idle_timeout: Duration,
    /// How long a rank of a run may be silent before the switch ends the run naming it
    /// (`--dead-after`, protocol.md §4.3; `None`: never). Default 1.5 s.
    pub dead_after: Option<Duration>,
    /// The admin socket to take job requests on (`None`: the jobs are fixed).
    pub admin: Option<std::path::PathBuf>,
    /// Slots in the pool beyond the starting jobs', for jobs added later.
    pub spare_slots: usize,
    /// Which switch serves.
    pub pipeline: SwitchPipeline,
    /// Shards: daemon threads, each on its own port (the next after the previous shard's)
    /// with its own switch (protocol.md §1.1). Workers find theirs by themselves.
    pub shards: usize,
    /// The jobs (of `jobs`) whose ranks are child switches (protocol.md §7).
    pub parent_jobs: Vec<u16>,
    /// The jobs (of `jobs`) whose sums go up to a parent switch (protocol.md §7).
    pub child_jobs: Vec<ChildSpec>,
    /// Serve a job that has no key (none in its spec, no `SWITCHML_JOB_KEY`) instead of
    /// refusing it: anyone who reaches the switch may then join it. A spec's key `none`
    /// says the same for one job.
    pub allow_keyless: bool,
    /// Answer Status messages (`--status on`, the default). Off, the daemon drops them
    /// before the switch sees them (counted as `status_off`): Status asks no key.
    pub answer_status: bool,
    /// What one source address may cost the daemon and get from it without a credential
    /// (`source_limit`): answers needing no session per destination, and datagrams
    /// failing authentication per source before the rest are dropped unread.
    pub source_limits: crate::SourceLimits,
    /// Mark congestion while the socket's send backlog holds more than this many bytes
    /// (`--mark-backlog`, [`crate::backlog_mark`]); `None`, the default: never sampled.
    pub mark_backlog: Option<usize>,
    /// Serve every counter at `http://ADDR/metrics` for Prometheus (`--metrics ADDR`);
    /// `None`, the default: no endpoint.
    pub metrics: Option<SocketAddr>,
    /// Move datagrams through AF_XDP on this interface (`--io xdp --iface IF`): shard `i`
    /// on receive queue `i`, its UDP socket beside (`switchml_xdp::Io`). `None`, the
    /// default, or XDP unavailable (logged, with the reason): the UDP sockets alone.
    pub xdp_iface: Option<String>,
}

impl SwitchConfig {
    /// Serve `jobs` on `bind`: no loss, the default idle timeout, no admin socket.
    pub fn new(bind: SocketAddr, jobs: Vec<JobSpec>) -> SwitchConfig {
        SwitchConfig {
            bind,
            jobs,
            drop_rate: 0.0,
            seed: 1,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            dead_after: Some(switchml_udp::clock::to_std(
                switchml_core::switch::DEFAULT_DEAD_AFTER,
            )),
            admin: None,
            spare_slots: 0,
            pipeline: SwitchPipeline::default(),
            shards: 1,
            parent_jobs: Vec::new(),
            child_jobs: Vec::new(),
            allow_keyless: false,
            answer_status: true,
            source_limits: crate::SourceLimits::default(),
            mark_backlog: None,
            metrics: None,
            xdp_iface: None,
        }
    }

    /// Return where job `id` sits in a tree of switches.
    pub(crate) fn place(&self, id: u16) -> JobPlace {
        if self.parent_jobs.contains(&id) {
            return JobPlace::Parent;
        }
        match self.child_jobs.iter().find(|c| c.job == id) {
            Some(c) => JobPlace::Child(*c),
            None => JobPlace::Flat,
        }
    }

    /// Check the parent and child jobs: each names a job of `jobs`, and is one or the
    /// other. Sharded, each shard is a level of its own: shard `i` of a child goes up to
    /// shard `i` of its parent, which must have as many (protocol.md §7).
    fn check_tree(&self) -> Result<(), String> {
        let tiered = self
            .parent_jobs
            .iter()
            .chain(self.child_jobs.iter().map(|c| &c.job));
        for &id in tiered {
            if !self.jobs.iter().any(|j| j.id == id) {
                return Err(format!(
                    "job {id}: a parent or child job must be a --job too"
                ));
            }
        }
        if let Some(c) = self
            .child_jobs
            .iter()
            .find(|c| self.parent_jobs.contains(&c.job))
        {
            return Err(format!("job {}: both a parent's and a child's", c.job));
        }
        Ok(())
    }
}

/// How long a run may be idle by default: longer than any pause between all-reduces
/// (evaluation, checkpoints), short enough that a crashed job's state does not linger.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(3600);

/// A switch daemon running on its own threads, one per shard.
pub struct RunningSwitch {
    addr: SocketAddr,
    epoch: u32,
    stop: Arc<AtomicBool>,
    shards: Vec<ShardThread>,
    board: CounterBoard,
    metrics: Option<MetricsEndpoint>,
}

/// One shard's thread.
struct ShardThread {
    thread: Option<JoinHandle<io::Result<()>>>,
}

/// How often the daemon thread publishes its counters.
const PUBLISH_EVERY: Duration = Duration::from_millis(50);

impl RunningSwitch {
    /// Bind, set up the jobs and start serving; errors (a taken port, a job that does not
    /// fit) come back here, before any shard serves.
    pub fn start(config: &SwitchConfig) -> io::Result<RunningSwitch> {
        config
            .check_tree()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let sockets = bind_shards(config.bind, config.shards)?;
        let addr = sockets[0].local_addr()?;
        let epoch = switchml_udp::fresh::fresh_epoch();
        let stop = Arc::new(AtomicBool::new(false));
        // Every shard holds the same jobs: take the environment's key once. Without one
        // the key stays unsaid (`None`), which the daemon refuses unless allowed: `Some(0)`
        // is an operator's explicit `none`.
        let mut config = config.clone();
        let env_key = match config.jobs.iter().any(|j| j.key.is_none()) {
            true => key_from_env().map_err(io::Error::other)?,
            false => 0,
        };
        for job in &mut config.jobs {
            if job.key.is_none() && env_key != 0 {
                job.key = Some(env_key);
            }
        }
        let admin = config.admin.as_deref().map(AdminSocket::bind).transpose()?;
        let xdp = config.xdp_iface.as_deref().and_then(attach_xdp);
        let count = sockets.len();
        let (ready_tx, ready) = mpsc::channel::<io::Result<()>>();
        let mut shards = Vec::with_capacity(count);
        let board = CounterBoard::new(count);
        let roles = AdminRole::for_shards(count, admin);
        for (index, (socket, role)) in sockets.into_iter().zip(roles).enumerate() {
            let shard = u16::try_from(index)
                .ok()
                .and_then(|i| Shard::new(i, count as u16))
                .ok_or_else(|| io::Error::other("shard numbering"))?;
            let io = Io::open(
                xdp.as_ref(),
                index as u32,
                &socket,
                &format!("shard {index}"),
            );
            let thread = {
                let (config, stop, board, ready) = (
                    config.clone(),
                    Arc::clone(&stop),
                    board.clone(),
                    ready_tx.clone(),
                );
                std::thread::Builder::new()
                    .name(format!("switchml-switch{index}"))
                    .spawn(move || {
                        serve(
                            socket, io, &config, epoch, shard, role, &stop, &board, &ready,
                        )
                    })?
            };
            shards.push(ShardThread {
                thread: Some(thread),
            });
        }
        drop(ready_tx);
        let mut running = RunningSwitch {
            addr,
            epoch,
            stop,
            shards,
            board,
            metrics: None,
        };
        for _ in 0..count {
            let failure = match ready.recv() {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e,
                Err(_) => io::Error::other("a switch thread died during set-up"),
            };
            let _ = running.shut_down();
            return Err(failure);
        }
        if let Some(at) = config.metrics {
            let board = running.board.clone();
            match MetricsEndpoint::start(at, Box::new(move || board.total())) {
                Ok(m) => running.metrics = Some(m),
                Err(e) => {
                    let _ = running.shut_down();
                    return Err(e);
                }
            }
        }
        Ok(running)
    }

    /// Return the address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Return where the metrics endpoint listens, if there is one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(MetricsEndpoint::addr)
    }

    /// Return its epoch.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Return the number of shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// Return the counters as last published (at most 50 ms old), every shard's added up.
    pub fn counters(&self) -> DaemonCounters {
        self.board.total()
    }

    /// Return each shard's counters as last published (at most 50 ms old).
    pub fn shard_counters(&self) -> Vec<DaemonCounters> {
        self.board.shards()
    }

    /// Return whether every shard's thread is still serving.
    pub fn is_running(&self) -> bool {
        self.shards
            .iter()
            .all(|s| s.thread.as_ref().is_some_and(|t| !t.is_finished()))
    }

    /// Stop serving, close the socket and return the final counters.
    pub fn stop(mut self) -> io::Result<DaemonCounters> {
        self.shut_down()?;
        Ok(self.counters())
    }

    fn shut_down(&mut self) -> io::Result<()> {
        self.metrics = None;
        self.stop.store(true, Ordering::Relaxed);
        let mut result = Ok(());
        for (i, s) in self.shards.iter_mut().enumerate() {
            let r = match s.thread.take().map(JoinHandle::join) {
                Some(Ok(r)) => r,
                Some(Err(_)) => Err(io::Error::other(format!(
                    "the switch thread of shard {i} panicked"
                ))),
                None => Ok(()),
            };
            if result.is_ok() {
                result = r;
            }
        }
        result
    }
}

impl Drop for RunningSwitch {
    fn drop(&mut self) {
        let _ = self.shut_down();
    }
}

/// A shard's daemon thread: build its switch, then serve it.
#[allow(clippy::too_many_arguments)] // one thread's whole world, passed once
fn serve(
    socket: UdpSocket,
    io: Io,
    config: &SwitchConfig,
    epoch: u32,
    shard: Shard,
    admin: AdminRole,
    stop: &AtomicBool,
    board: &CounterBoard,
    ready: &mpsc::Sender<io::Result<()>>,
) -> io::Result<()> {
    let total: usize = config.jobs.iter().map(|j| usize::from(j.slots)).sum();
    let slots = (total + config.spare_slots).max(1);
    match config.pipeline {
        SwitchPipeline::Reference => {
            let mut pool = vec![Slot::<MAX_COUNT, RANK_WORDS>::IDLE; slots];
            let mut switch = SoftSwitch::new(&mut pool, epoch);
            // A lost Result comes back for a Probe, not a resend (protocol.md §6.1).
            switch.set_probe_results(true);
            let endpoint = endpoint(switch, config, shard);
            serve_with(endpoint, socket, io, config, admin, stop, board, ready)
        }
        SwitchPipeline::P4Model => {
            let model = Pipeline::new(ModelConfig {
                slots,
                jobs: MAX_JOBS,
                workers: MAX_JOBS * usize::from(switchml_p4model::classifier::MAX_WORLD),
                epoch,
                max_count: switchml_p4model::MAX_COUNT,
                switch: SwitchAddr::default(),
            });
            let endpoint = endpoint(model, config, shard);
            serve_with(endpoint, socket, io, config, admin, stop, board, ready)
        }
    }
}

/// The endpoint of shard `shard` around `switch`.
fn endpoint<G: ControlPlane>(switch: G, config: &SwitchConfig, shard: Shard) -> SoftEndpoint<G> {
    let idle = switchml_core::time::Duration::from_micros(
        u64::try_from(config.idle_timeout.as_micros()).unwrap_or(u64::MAX),
    );
    let dead_after = config.dead_after.map(switchml_udp::clock::to_core);
    SoftEndpoint::new(switch, idle)
        .with_shard(shard)
        .with_dead_after(dead_after)
}

/// Report readiness and serve `endpoint` until stopped.
#[allow(clippy::too_many_arguments)] // as `serve`
fn serve_with<G: ControlPlane>(
    endpoint: SoftEndpoint<G>,
    socket: UdpSocket,
    io: Io,
    config: &SwitchConfig,
    admin: AdminRole,
    stop: &AtomicBool,
    board: &CounterBoard,
    ready: &mpsc::Sender<io::Result<()>>,
) -> io::Result<()> {
    let fail = |e: io::Error| {
        let _ = ready.send(Err(e));
        Ok(())
    };
    let index = usize::from(endpoint.shard().index());
    // Each shard loses its own datagrams.
    let seed = config
        .seed
        .wrapping_add(u64::from(endpoint.shard().index()));
    let loss = Some((config.drop_rate, seed));
    let mut daemon = match Daemon::new(socket, endpoint, admin, loss) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    daemon.use_io(io);
    daemon.allow_keyless(config.allow_keyless);
    daemon.answer_status(config.answer_status);
    daemon.mark_backlog(config.mark_backlog);
    daemon.limit_sources(config.source_limits);
    daemon.read_counters_from(board.clone());
    for job in &config.jobs {
        if let Err(e) = daemon.add_job_at(job, config.place(job.id)) {
            return fail(io::Error::new(io::ErrorKind::InvalidInput, e));
        }
    }
    let _ = ready.send(Ok(()));
    let publish = |daemon: &Daemon<G>| {
        let mut c = daemon.counters();
        c.cpu = switchml_udp::cpu::thread_cpu();
        board.publish(index, c);
    };
    let mut published = Instant::now();
    let result = loop {
        if stop.load(Ordering::Relaxed) {
            // Tell every run's ranks, so they fail at once instead of timing out.
            break daemon.shutdown();
        }
        if let Err(e) = daemon.step(Duration::from_millis(20)) {
            log::error!("the switch daemon on {} stopped: {e}", config.bind);
            break Err(e);
        }
        if published.elapsed() >= PUBLISH_EVERY {
            publish(&daemon);
            published = Instant::now();
        }
    };
    publish(&daemon);
    result
}

/// Attach the AF_XDP program to `iface`, or say why not: the daemon then serves on its UDP
/// sockets alone.
fn attach_xdp(iface: &str) -> Option<Arc<Attached>> {
    match Attached::attach(iface) {
        Ok(a) => Some(a),
        Err(e) => {
            log::warn!("--io xdp: {e}; serving on UDP sockets instead");
            None
        }
    }
}
