//! The switch daemon: a software switch serving real workers over UDP.
//!
//! It is the adapter around the core's [`Endpoint`] (a switch plus its lane table and run
//! timer), whichever switch serves: the reference `Switch` or the P4 model's `Pipeline`
//! (`--pipeline`, [`SwitchPipeline`](crate::SwitchPipeline)), both being a
//! core [`ControlPlane`]. It receives datagrams in `recvmmsg` batches, hands each to the
//! endpoint with its source address and the time, and sends what the endpoint says where it
//! says — back to the sender, or replicated to the lanes of a job's run in a `sendmmsg`
//! batch (multicast emulated). Optionally it loses datagrams on purpose ([`LossInjector`]).
//! It never decides anything about admission, slots, versions or sums: the core does
//! (protocol.md §4). What it does decide: a datagram too long for any message, or from a
//! source no answer can go to ([`is_bad_source`]), never reaches the endpoint (both are
//! counted there).
//!
//! No datagram can end it: one the kernel will not send is skipped, and every problem is
//! counted and logged at a limited rate ([`daemon_log`](crate::daemon_log)). Only a socket
//! that is itself unusable ([`is_fatal`]) stops the daemon.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use switchml_core::switch::{
    first_free_range, place_share, ControlPlane, DropReason, Endpoint, JobConfig, PoolShare, Route,
    Switch, Transmit,
};
use switchml_core::wire::{self, AbortPacket, AbortRepr, JoinReplyPacket, Pretty, TRACE_TARGET};

use switchml_udp::backlog::send_backlog;
use switchml_udp::batch::{is_fatal, RecvBatch, SendBatch};
use switchml_udp::clock::Clock;
use switchml_udp::loss::LossInjector;
use switchml_udp::socket::{size_buffer, Buffer};
use switchml_udp::source::is_bad_source;
use switchml_udp::Offload;
use switchml_xdp::Io;

use crate::admin::AdminRequest;
use crate::backlog_mark::{carries_mark, BacklogMark};
use crate::daemon_log::DaemonLog;
use crate::job::{key_from_env, keyless_refused, JobSpec};
use crate::shards::{ask_peers, AdminRole};
use crate::source_limit::{SourceLimit, SourceLimits};
use crate::traffic::{CounterBoard, DaemonCounters, JobTraffic};
use crate::tree::{ChildSpec, ParentWatch};

/// Datagrams per `recvmmsg`.
pub const RECV_BATCH: usize = 64;
/// Receive buffers per `recvmmsg` with GRO, each of up to 64 datagrams coalesced.
const GRO_BATCH: usize = 16;
/// Datagrams per `sendmmsg`.
const SEND_ENTRIES: usize = 256;
/// Socket buffer the daemon asks for, each way.
const SOCKET_BUFFER: usize = 8 << 20;

/// Values per slot: the largest `count` the software switch accepts.
pub const MAX_COUNT: usize = 1024;
/// 64-rank words per seen bitmap: up to 256 ranks per job.
pub const RANK_WORDS: usize = 4;
/// Jobs one switch serves at once.
pub const MAX_JOBS: usize = 16;

/// The software switch's aggregator.
pub type SoftSwitch<'a> = Switch<'a, MAX_COUNT, RANK_WORDS, MAX_JOBS>;

/// The software switch's endpoint over switch `G`, addresses being socket addresses.
pub type SoftEndpoint<G> = Endpoint<SocketAddr, Vec<Route<SocketAddr>>, G, { MAX_JOBS }>;

/// The longest datagram the daemon reads whole, whichever switch serves: the largest
/// message of the reference software switch. Anything longer is `Oversized`; a shorter
/// message the switch cannot hold (a P4 model's count above its 256) is the switch's to
/// refuse.
pub const LONGEST: usize = SoftSwitch::OUT_LEN;

/// The daemon around the core's endpoint.
pub struct Daemon<G> {
    socket: UdpSocket,
    /// The socket alone, or an AF_XDP path beside it (`--io xdp`).
    io: Io,
    endpoint: SoftEndpoint<G>,
    clock: Clock,
    counters: DaemonCounters,
    loss: Option<LossInjector>,
    recv: RecvBatch,
    send: SendBatch,
    log: DaemonLog,
    admin: AdminRole,
    /// Every shard's last published counters, for the admin socket's `stats`.
    board: CounterBoard,
    /// The parents of child jobs, watched for silence (protocol.md §7).
    watches: Vec<ParentWatch>,
    /// The jobs that are part of a tree of switches (a parent's or a child's), whose ranges
    /// a share may not move.
    tree_jobs: Vec<u16>,
    /// Whether a job whose spec gives no key, with no `SWITCHML_JOB_KEY`, is served
    /// without one (`--allow-keyless`) rather than refused.
    allow_keyless: bool,
    /// Whether Status is answered (`--status off`: dropped unanswered).
    answer_status: bool,
    /// The send backlog's threshold for marking (`--mark-backlog`; `None`: never sampled).
    mark: Option<BacklogMark>,
    /// Per source: datagrams that failed authentication (then the source is dropped
    /// unread for a while).
    junk: SourceLimit,
    /// Per destination: answers that needed no session.
    replies: SourceLimit,
}

/// Where a job sits in a tree of switches (protocol.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobPlace {
    /// Its ranks are workers.
    Flat,
    /// Its ranks are child switches.
    Parent,
    /// Its sums go up to a parent.
    Child(ChildSpec),
}

/// Lanes per rank the address table has room for.
pub const MAX_LANES: usize = 64;

impl<G: ControlPlane> Daemon<G> {
    /// Serve `endpoint` (jobs come with [`Daemon::add_job`]) on `socket`, taking admin
    /// requests as `admin` says; `loss` is `(rate, seed)`.
    pub(crate) fn new(
        socket: UdpSocket,
        endpoint: SoftEndpoint<G>,
        admin: AdminRole,
        loss: Option<(f64, u64)>,
    ) -> io::Result<Daemon<G>> {
        socket.set_nonblocking(true)?;
        let addr = socket.local_addr()?;
        let shard = endpoint.shard();
        log::info!(
            "switch daemon on {addr} (shard {} of {})",
            shard.index(),
            shard.count()
        );
        let buffers = [
            (Buffer::Receive, "receive", "rmem_max"),
            (Buffer::Send, "send", "wmem_max"),
        ];
        for (which, what, max) in buffers {
            // Linux reports twice what it grants, the other half being its bookkeeping.
            let granted = size_buffer(&socket, which, SOCKET_BUFFER)? / 2;
            if granted < SOCKET_BUFFER {
                log::info!(
                    "socket {what} buffer: {granted} bytes of {SOCKET_BUFFER} asked for \
                     (net.core.{max} caps it); bursts may overflow it"
                );
            }
        }
        let offload = Offload::enable(socket.as_raw_fd());
        log::info!(
            "UDP segmentation offload: GSO {}, GRO {}",
            if offload.gso { "on" } else { "off" },
            if offload.gro { "on" } else { "off" }
        );
        let out_len = LONGEST.max(SoftEndpoint::<G>::OUT_LEN);
        let mut send = SendBatch::new(RECV_BATCH, out_len, SEND_ENTRIES);
        send.set_gso(offload.gso);
        let counters = DaemonCounters::default();
        let limits = SourceLimits::default();
        Ok(Daemon {
            socket,
            io: Io::Socket,
            endpoint,
            clock: Clock::start(),
            counters,
            loss: loss.filter(|(r, _)| *r > 0.0).map(|(r, s)| {
                log::info!("losing {:.2}% of datagrams each way (seed {s})", r * 100.0);
                LossInjector::new(r, s)
            }),
            // Exactly the largest valid message: a longer datagram is cut (by the kernel,
            // `MSG_TRUNC`, or when cut out of a GRO buffer) and says so, so that it counts
            // as `Oversized`.
            recv: match offload.gro {
                true => RecvBatch::with_gro(GRO_BATCH, out_len, true),
                false => RecvBatch::new(RECV_BATCH, out_len),
            },
            send,
            log: DaemonLog::new(),
            admin,
            board: CounterBoard::new(0),
            watches: Vec::new(),
            tree_jobs: Vec::new(),
            allow_keyless: false,
            answer_status: true,
            mark: None,
            junk: SourceLimit::new(limits.junk_burst, limits.junk_rate),
            replies: SourceLimit::new(limits.reply_burst, limits.reply_rate),
        })
    }

    /// Move datagrams through `io`. An AF_XDP path copies frames into the receive batch
    /// one per buffer, so it gets [`RECV_BATCH`] buffers, still GRO buffers if the socket
    /// has GRO on (a coalesced datagram read into a plain buffer would be cut).
    pub(crate) fn use_io(&mut self, io: Io) {
        if io.is_xdp() {
            let len = LONGEST.max(SoftEndpoint::<G>::OUT_LEN);
            self.recv = RecvBatch::with_gro(RECV_BATCH, len, self.recv.has_gro());
        }
        self.io = io;
    }

    /// Answer the admin socket's `stats` from `board`, where every shard publishes.
    pub(crate) fn read_counters_from(&mut self, board: CounterBoard) {
        self.board = board;
    }

    /// Answer Status messages, or (`false`) drop them unanswered, counted as `status_off`.
    pub(crate) fn answer_status(&mut self, on: bool) {
        self.answer_status = on;
    }

    /// Sample the socket's send backlog before each batch and mark while it holds more
    /// than `threshold` bytes ([`BacklogMark`]); `None`: never.
    pub(crate) fn mark_backlog(&mut self, threshold: Option<usize>) {
        self.mark = threshold.map(BacklogMark::new);
        if let (Some(m), 0) = (&self.mark, self.endpoint.shard().index()) {
            log::info!(
                "marking congestion while more than {} bytes wait to be sent",
                m.threshold()
            );
        }
    }

    /// Limit what each source costs and gets as `limits` says (`source_limit`).
    pub(crate) fn limit_sources(&mut self, limits: SourceLimits) {
        self.junk = SourceLimit::new(limits.junk_burst, limits.junk_rate);
        self.replies = SourceLimit::new(limits.reply_burst, limits.reply_rate);
    }

    /// Serve jobs that come with no key and no `SWITCHML_JOB_KEY` (with a warning) instead
    /// of refusing them.
    pub(crate) fn allow_keyless(&mut self, allow: bool) {
        self.allow_keyless = allow;
    }

    /// Register a job on the first free range of the pool that fits it; its key is the
    /// spec's, else `SWITCHML_JOB_KEY`. A job left without one is refused unless the spec
    /// says `none` or the daemon allows keyless jobs (then with a warning: anyone may join).
    pub fn add_job(&mut self, spec: &JobSpec) -> Result<JobConfig, String> {
        self.add_job_at(spec, JobPlace::Flat)
    }

    /// [`Daemon::add_job`], the job sitting at `place` of a tree of switches.
    pub(crate) fn add_job_at(
        &mut self,
        spec: &JobSpec,
        place: JobPlace,
    ) -> Result<JobConfig, String> {
        let key = match spec.key {
            Some(k) => k,
            None => key_from_env()?,
        };
        if key == 0 && spec.key.is_none() && !self.allow_keyless {
            return Err(keyless_refused(spec.id));
        }
        let first_shard = self.endpoint.shard().index() == 0;
        if key == 0 && first_shard {
            log::warn!(
                "job {}: no key (SWITCHML_JOB_KEY): anyone who reaches the switch can join it",
                spec.id
            );
        }
        let switch = self.endpoint.switch();
        let Some(slot_lo) = first_free_range(switch, spec.slots) else {
            return Err(format!(
                "job {}: no free range of {} slots in the pool of {}",
                spec.id,
                spec.slots,
                switch.pool_len()
            ));
        };
        let config = JobConfig {
            id: spec.id,
            world: spec.world,
            slot_lo,
            slot_count: spec.slots,
            key,
        };
        let routes = lane_table(&config);
        let added = match place {
            JobPlace::Flat => self.endpoint.add_job(config, routes),
            JobPlace::Parent => self.endpoint.add_parent_job(config, routes),
            JobPlace::Child(c) => {
                let parent_key = match c.parent_key {
                    Some(k) => k,
                    None => key_from_env()?,
                };
                let link = c.link(parent_key);
                let parent = c.parent_of_shard(self.endpoint.shard()).ok_or_else(|| {
                    format!(
                        "job {}: no port for shard {} after the parent's {}",
                        spec.id,
                        self.endpoint.shard().index(),
                        c.parent
                    )
                })?;
                let shards = self.endpoint.shard().count();
                self.watches
                    .push(ParentWatch::new(spec.id, parent, c.parent_job, shards));
                self.endpoint.add_child_job(config, link, parent, routes)
            }
        };
        added.map_err(|e| format!("job {}: {e}", spec.id))?;
        if place != JobPlace::Flat {
            self.tree_jobs.push(spec.id);
        }
        self.counters.jobs.push(JobTraffic {
            job: spec.id,
            ..JobTraffic::default()
        });
        log::log!(
            if first_shard {
                log::Level::Info
            } else {
                log::Level::Debug
            },
            "job {}: {} ranks, slots {}..{}",
            spec.id,
            spec.world,
            slot_lo,
            slot_lo + u32::from(spec.slots)
        );
        Ok(config)
    }

    /// End job `id`'s run (its ranks get Abort `JobRemoved`: the switch itself goes on) and
    /// unregister it.
    pub fn remove_job(&mut self, id: u16) -> Result<(), String> {
        if self.endpoint.switch().job_snapshot(id).is_none() {
            return Err(format!("no job {id}"));
        }
        self.tell(|e, out| e.shutdown_run(id, wire::AbortReason::JobRemoved, out))
            .map_err(|e| format!("job {id}: telling its ranks: {e}"))?;
        self.endpoint
            .remove_job(id)
            .map_err(|e| format!("job {id}: {e}"))?;
        self.counters.jobs.retain(|j| j.job != id);
        self.watches.retain(|w| w.job != id);
        self.tree_jobs.retain(|&j| j != id);
        log::info!("job {id} removed");
        Ok(())
    }

    /// Give job `id` `share` of the slot pool: its range becomes that share of the pool, at
    /// the lowest range that fits (the core's [`place_share`]). Only between runs, since a
    /// run's ranks address its slots; the job keeps its key and world, and its switch
    /// counters start again. A job of a tree of switches keeps its range (its parent's and
    /// children's must match it).
    pub fn share_job(&mut self, id: u16, share: PoolShare) -> Result<JobConfig, String> {
        let switch = self.endpoint.switch();
        let Some(job) = switch.job_snapshot(id) else {
            return Err(format!("no job {id}"));
        };
        if job.has_run() {
            return Err(format!(
                "job {id} has a run open ({} joined): its ranks address its slots; give it \
                 a share between runs",
                job.joined
            ));
        }
        if self.tree_jobs.contains(&id) {
            return Err(format!(
                "job {id} is part of a tree of switches: its range must match its parent's \
                 and children's"
            ));
        }
        let Some((slot_lo, slot_count)) = place_share(switch, id, share) else {
            return Err(format!(
                "job {id}: no free range of {} slots ({}% of the pool of {})",
                share.slots_of(switch.pool_len()),
                share.percent(),
                switch.pool_len()
            ));
        };
        let old = job.config;
        let config = JobConfig {
            slot_lo,
            slot_count,
            ..old
        };
        self.endpoint
            .remove_job(id)
            .map_err(|e| format!("job {id}: {e}"))?;
        // The new range was free with the job's own counted as free, so it installs; if
        // not, the job goes back where it was.
        if let Err(e) = self.endpoint.add_job(config, lane_table(&config)) {
            self.endpoint
                .add_job(old, lane_table(&old))
                .map_err(|e2| format!("job {id}: {e}; restoring its range: {e2}"))?;
            return Err(format!("job {id}: {e}"));
        }
        log::info!(
            "job {id}: {}% of the pool: slots {slot_lo}..{}",
            share.percent(),
            slot_lo + u32::from(slot_count)
        );
        Ok(config)
    }

    /// Describe the jobs, one line each.
    pub fn list_jobs(&self) -> Vec<String> {
        let switch = self.endpoint.switch();
        switch
            .job_ids()
            .filter_map(|id| switch.job_snapshot(id))
            .map(|j| {
                let c = j.config;
                format!(
                    "job {}: {} ranks, slots {}..{}, {}, {} joined, {} runs",
                    c.id,
                    c.world,
                    c.slot_lo,
                    c.slot_lo + u32::from(c.slot_count),
                    if j.has_run() { "running" } else { "idle" },
                    j.joined,
                    j.counters.runs
                )
            })
            .collect()
    }

    /// Answer the admin socket's waiting clients (shard 0), passing each request on to the
    /// other shards; or do what shard 0 passed on (any other shard).
    fn serve_admin(&mut self) {
        match &mut self.admin {
            AdminRole::Leader { socket, .. } => {
                let Some(admin) = socket.take() else {
                    return;
                };
                admin.serve(|request| {
                    // Every shard's counters are on the board already: nothing to ask.
                    if request == Ok(AdminRequest::Stats) {
                        return self.answer(request);
                    }
                    let mine = self.answer(request.clone());
                    match &self.admin {
                        AdminRole::Leader { peers, .. } => ask_peers(peers, &request, mine),
                        AdminRole::Follower(_) => mine,
                    }
                });
                if let AdminRole::Leader { socket, .. } = &mut self.admin {
                    *socket = Some(admin);
                }
            }
            AdminRole::Follower(requests) => {
                let waiting: Vec<_> = requests.try_iter().collect();
                for r in waiting {
                    let answer = self.answer(r.request);
                    let _ = r.reply.send(answer);
                }
            }
        }
    }

    /// Do one admin request; return the answer line(s).
    fn answer(&mut self, request: Result<AdminRequest, String>) -> String {
        match request {
            Err(e) => format!("error: {e}"),
            Ok(AdminRequest::Add(spec)) => match self.add_job(&spec) {
                Ok(c) => format!(
                    "ok job {}: {} ranks, slots {}..{}",
                    c.id,
                    c.world,
                    c.slot_lo,
                    c.slot_lo + u32::from(c.slot_count)
                ),
                Err(e) => format!("error: {e}"),
            },
            Ok(AdminRequest::Remove(id)) => match self.remove_job(id) {
                Ok(()) => format!("ok job {id} removed"),
                Err(e) => format!("error: {e}"),
            },
            Ok(AdminRequest::Share(id, share)) => match self.share_job(id, share) {
                Ok(c) => format!(
                    "ok job {id}: {}% of the pool of {}, slots {}..{}",
                    share.percent(),
                    self.endpoint.switch().pool_len(),
                    c.slot_lo,
                    c.slot_lo + u32::from(c.slot_count)
                ),
                Err(e) => format!("error: {e}"),
            },
            Ok(AdminRequest::Stats) => format!(
                "ok\n{}",
                crate::metrics::encode(&self.board.total()).trim_end()
            ),
            Ok(AdminRequest::List) => {
                let jobs = self.list_jobs();
                let mut reply = format!("ok {} jobs", jobs.len());
                for j in jobs {
                    reply += "\n";
                    reply += &j;
                }
                reply
            }
        }
    }

    /// Return the counters, with the switch's copied in.
    pub fn counters(&self) -> DaemonCounters {
        let mut c = self.counters.clone();
        let switch = self.endpoint.switch();
        c.switch = switch.switch_counters();
        c.expired_runs = self.endpoint.expired_runs();
        c.redirected = self.endpoint.redirected();
        c.cookies = self.endpoint.cookies_sent();
        let xdp = self.io.counters();
        (c.xdp_received, c.xdp_sent) = (xdp.received, xdp.sent);
        for j in &mut c.jobs {
            if let Some(job) = switch.job_snapshot(j.job) {
                j.switch = job.counters;
            }
        }
        c
    }

    /// Send Abort `Shutdown` to the ranks of every open run.
    pub fn shutdown(&mut self) -> io::Result<()> {
        self.tell(|e, out| e.shutdown(out))
    }

    /// Send what `next` writes, until it has nothing more.
    fn tell(
        &mut self,
        mut next: impl FnMut(&mut SoftEndpoint<G>, &mut [u8]) -> Option<Transmit>,
    ) -> io::Result<()> {
        loop {
            if self.send.buffer().is_none() {
                self.flush()?;
            }
            let Some((b, out)) = self.send.buffer() else {
                return Ok(());
            };
            let Some(t) = next(&mut self.endpoint, out) else {
                self.send.unuse_last();
                return self.flush();
            };
            let mut output = Output {
                send: &mut self.send,
                socket: &self.socket,
                io: &mut self.io,
                loss: &mut self.loss,
                counters: &mut self.counters,
            };
            output.route(&self.endpoint, &t, b, &UNSPECIFIED)?;
            output.owed_up(&mut self.endpoint)?;
        }
    }

    /// Handle one batch of datagrams, waiting at most `timeout` for the first; return how
    /// many were received.
    pub fn step(&mut self, timeout: Duration) -> io::Result<usize> {
        let fd = self.socket.as_raw_fd();
        let mut n = self.receive()?;
        if n == 0 && self.io.wait(fd, None, timeout)?.socket {
            n = self.receive()?;
        }
        let now = self.clock.now();
        let failures = self.counters.send_failures;
        if n > 0 {
            self.sample_backlog();
        }
        for i in 0..n {
            self.handle(i, now)?;
        }
        if self.endpoint.poll_timeout().is_some_and(|t| t <= now) {
            self.endpoint.handle_timeout(now);
            // A liveness sweep may have ended runs: their Aborts (protocol.md §4.3).
            self.tell(|e, out| e.poll_transmit(out))?;
        }
        self.flush()?;
        self.serve_admin();
        for w in &mut self.watches {
            if w.newly_silent() {
                log::warn!(
                    "job {}: its parent switch {} has not answered in {:?} (is it running, \
                     serving job {} as a parent?)",
                    w.job,
                    w.parent,
                    crate::tree::PARENT_SILENCE,
                    w.parent_job
                );
            }
        }
        let failed = self.counters.send_failures - failures;
        self.log.send_failed(failed, self.send.take_failure());
        Ok(n)
    }

    /// Read the send backlog and tell the switch whether to mark what it counts in this
    /// batch `CONGESTED` (protocol.md §6.3); an error reads as an empty queue (the signal
    /// is advice, never a reason to stop).
    fn sample_backlog(&mut self) {
        let Some(mark) = &self.mark else {
            return;
        };
        let queued = send_backlog(&self.socket).unwrap_or(0);
        let congested = mark.sample(queued);
        if congested {
            self.counters.congested_batches += 1;
        }
        self.endpoint.set_congested(congested);
    }

    /// Receive a batch. An error that is not the socket's own ([`is_fatal`]) is counted,
    /// logged, and reads as nothing received.
    fn receive(&mut self) -> io::Result<usize> {
        match self.io.recv(self.socket.as_raw_fd(), &mut self.recv) {
            Err(e) if !is_fatal(&e) => {
                self.counters.recv_errors += 1;
                self.log.recv_failed(&e);
                Ok(0)
            }
            r => r,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        flush(
            &mut self.send,
            &self.socket,
            &mut self.io,
            &mut self.counters,
        )?;
        self.send.clear();
        Ok(())
    }

    /// Hand received datagram `i` to the endpoint and queue what it answers.
    fn handle(&mut self, i: usize, now: switchml_core::time::Instant) -> io::Result<()> {
        let Daemon {
            socket,
            io,
            endpoint,
            counters,
            loss,
            recv,
            send,
            log,
            watches,
            answer_status,
            junk,
            replies,
            ..
        } = self;
        let Some(d) = recv.get(i) else {
            return Ok(());
        };
        counters.received += 1;
        if loss.as_mut().is_some_and(LossInjector::lose) {
            counters.injected_losses += 1;
            return Ok(());
        }
        let from = d.from.filter(|f| !is_bad_source(f));
        let Some(from) = from.filter(|_| !d.truncated) else {
            let reason = if d.truncated {
                counters.oversized += 1;
                DropReason::Oversized
            } else {
                counters.bad_source += 1;
                log.bad_source(d.from);
                DropReason::BadSource
            };
            endpoint.count_drop(reason);
            return Ok(());
        };
        // A parent switch's datagrams are never limited: a child's job depends on them, and
        // after a run ends it may rightly send many that no longer authenticate.
        let from_parent = watches.iter().any(|w| w.parent == from);
        if !from_parent && !junk.allows(&from, now) {
            counters.throttled += 1;
            return Ok(());
        }
        let bytes = d.bytes;
        log::trace!(target: TRACE_TARGET, "{from} → switch: {}", Pretty(bytes));
        let peeked = wire::peek(bytes).ok();
        if !*answer_status && peeked.is_some_and(|(t, _, _)| t == wire::MessageType::Status) {
            counters.status_off += 1;
            return Ok(());
        }
        let job = peeked.and_then(|(_, id, _)| counters.jobs.iter().position(|j| j.job == id));
        match job {
            Some(j) => counters.jobs[j].received += 1,
            None if peeked.is_some() => counters.unknown_job += 1,
            None => {}
        }
        if send.buffer().is_none() {
            flush(send, socket, io, counters)?;
            send.clear();
        } else {
            send.unuse_last();
        }
        let Some((b, out)) = send.buffer() else {
            return Ok(());
        };
        let bad_sessions = endpoint
            .switch()
            .switch_counters()
            .drops(DropReason::BadSession);
        let t = endpoint.handle(now, from, bytes, out);
        trace_sent(&t, out, &from);
        if let Transmit::Lanes { len, up: false, .. } = t {
            if out.get(..len).is_some_and(carries_mark) {
                counters.results_marked += 1;
            }
        }
        let reply = match t {
            Transmit::Reply { len } => out.get(..len),
            _ => None,
        };
        let failed = job.is_none()
            || endpoint
                .switch()
                .switch_counters()
                .drops(DropReason::BadSession)
                > bad_sessions
            || reply.is_some_and(refuses_a_stranger);
        if failed && !from_parent {
            junk.take(&from, now);
        }
        if !from_parent && reply.is_some_and(needs_no_session) && !replies.take(&from, now) {
            // Whatever the source claims to be, it gets no more than its share (a parent
            // switch, whose datagrams the watch below must see, is exempt).
            counters.replies_limited += 1;
            send.unuse_last();
            return Ok(());
        }
        // A parent's Result names the parent's job; what it causes is the child job's.
        let answered = match t {
            Transmit::Lanes { job, .. } => counters.jobs.iter().position(|j| j.job == job),
            _ => job,
        };
        if let Some(j) = answered {
            counters.jobs[j].count(&t);
        }
        for w in watches.iter_mut() {
            let up = matches!(t, Transmit::Lanes { job, up: true, .. } if job == w.job);
            if up {
                w.sent_up();
            }
            if from == w.parent {
                w.heard();
                if let Some(j) = counters.jobs.iter_mut().find(|j| j.job == w.job) {
                    j.from_parent += 1;
                }
                if t != Transmit::Nothing {
                    log_parent_abort(w, bytes);
                }
                log_shard_mismatch(w, bytes);
            }
        }
        if t == Transmit::Nothing {
            send.unuse_last();
            return Ok(());
        }
        let mut output = Output {
            send,
            socket,
            io,
            loss,
            counters,
        };
        output.route(endpoint, &t, b, &from)?;
        output.owed_up(endpoint)
    }
}

/// An empty address table for `job`: `world × lanes` entries, a lane holding a slot at
/// least.
fn lane_table(job: &JobConfig) -> Vec<Route<SocketAddr>> {
    let lanes = MAX_LANES.min(usize::from(job.slot_count));
    vec![None; usize::from(job.world) * lanes]
}

/// Trace what the switch sends for one datagram (`RUST_LOG=switchml::packet=trace`): once
/// per verdict, not once per replica.
fn trace_sent(t: &Transmit, out: &[u8], from: &SocketAddr) {
    if !log::log_enabled!(target: TRACE_TARGET, log::Level::Trace) {
        return;
    }
    let (len, to) = match *t {
        Transmit::Nothing => return,
        Transmit::Reply { len } => (len, from.to_string()),
        Transmit::Lanes { up: true, len, .. } => (len, "parent".into()),
        Transmit::Lanes { job, len, .. } => (len, format!("job {job}'s lanes")),
    };
    let bytes = out.get(..len).unwrap_or(&[]);
    log::trace!(target: TRACE_TARGET, "switch → {to}: {}", Pretty(bytes));
}

/// Return whether `reply` is an answer the switch gives without any credential: anything
/// but a Result, JoinReply or ProbeReply (which answer a session or a key the switch
/// checked) — a StatusReply, an Abort refusing a Join or a Probe, and any later such type.
/// These go to whatever source a datagram claims, so they are limited per destination.
fn needs_no_session(reply: &[u8]) -> bool {
    !matches!(
        wire::peek(reply),
        Ok((
            wire::MessageType::Result
                | wire::MessageType::JoinReply
                | wire::MessageType::ProbeReply,
            _,
            _
        ))
    )
}

/// Return whether `reply` refuses a datagram for a missing credential: an Abort naming an
/// unknown job, a wrong key, or a session that is not the run's.
fn refuses_a_stranger(reply: &[u8]) -> bool {
    let Ok(a) = AbortPacket::new_checked(reply).and_then(|p| AbortRepr::parse(&p)) else {
        return false;
    };
    matches!(
        a.reason,
        wire::AbortReason::UnknownJob | wire::AbortReason::BadKey | wire::AbortReason::SessionEnded
    )
}

/// The source address of what the daemon sends of its own accord.
const UNSPECIFIED: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 0);

/// Warn, once, if the parent's JoinReply in `bytes` says it has another number of shards
/// than this switch: shard `i` of a child goes up to shard `i` of its parent (§7).
fn log_shard_mismatch(w: &mut ParentWatch, bytes: &[u8]) {
    let Ok(reply) = JoinReplyPacket::new_checked(bytes) else {
        return;
    };
    if reply.msg_type() == wire::MessageType::JoinReply && w.newly_mismatched(reply.shards()) {
        log::warn!(
            "job {}: its parent switch {} has {} shard(s), this switch another number: a \
             sharded child needs a parent of as many shards (--threads), or lanes go astray",
            w.job,
            w.parent,
            reply.shards().max(1)
        );
    }
}

/// Log the parent's Abort in `bytes` that ended child job `w.job`'s run (its ranks were
/// told `ParentFailed`, which names the member but not the parent's reason).
fn log_parent_abort(w: &ParentWatch, bytes: &[u8]) {
    let Ok(a) = AbortPacket::new_checked(bytes).and_then(|p| AbortRepr::parse(&p)) else {
        return;
    };
    let hint = match a.reason {
        wire::AbortReason::WrongShard => {
            " (a sharded child needs a parent of as many shards, --threads)"
        }
        _ => "",
    };
    log::warn!(
        "job {}: its parent switch {} ended the run (job {}, member {}): {} (detail {}){hint}; \
         its ranks were told",
        w.job,
        w.parent,
        a.job,
        a.rank,
        a.reason,
        a.detail
    );
}

/// The sending half of the daemon, borrowed apart from the endpoint and the receive batch.
struct Output<'o> {
    send: &'o mut SendBatch,
    socket: &'o UdpSocket,
    io: &'o mut Io,
    loss: &'o mut Option<LossInjector>,
    counters: &'o mut DaemonCounters,
}

impl Output<'_> {
    /// Queue buffer `b` to every destination of `t`, through the loss injector.
    fn route<G: ControlPlane>(
        &mut self,
        endpoint: &SoftEndpoint<G>,
        t: &Transmit,
        b: usize,
        from: &SocketAddr,
    ) -> io::Result<()> {
        let len = match *t {
            Transmit::Nothing => return Ok(()),
            Transmit::Reply { len } | Transmit::Lanes { len, .. } => len,
        };
        let job = match *t {
            Transmit::Lanes { job, .. } => self.counters.jobs.iter().position(|j| j.job == job),
            _ => None,
        };
        let mut sent = 0u64;
        for to in endpoint.destinations(t, from) {
            if self.loss.as_mut().is_some_and(LossInjector::lose) {
                self.counters.injected_losses += 1;
                continue;
            }
            if self.send.is_full() {
                flush(self.send, self.socket, self.io, self.counters)?;
            }
            self.send.push(b, len, Some(to));
            sent += 1;
        }
        if let Some(j) = job {
            self.counters.jobs[j].sent += sent;
        }
        Ok(())
    }

    /// Queue what the endpoint owes a parent since the last transmit: a child's run that
    /// ended with an Abort to its ranks tells the parent too (protocol.md §7).
    fn owed_up<G: ControlPlane>(&mut self, endpoint: &mut SoftEndpoint<G>) -> io::Result<()> {
        if self.send.buffer().is_none() {
            flush(self.send, self.socket, self.io, self.counters)?;
            self.send.clear();
        } else {
            self.send.unuse_last();
        }
        let Some((b, out)) = self.send.buffer() else {
            return Ok(());
        };
        let Some(t) = endpoint.poll_transmit(out) else {
            self.send.unuse_last();
            return Ok(());
        };
        if let Transmit::Lanes { job, .. } = t {
            if let Some(j) = self.counters.jobs.iter_mut().find(|j| j.job == job) {
                j.count(&t);
            }
        }
        self.route(endpoint, &t, b, &UNSPECIFIED)
    }
}

/// Send what is queued, counting what went and what did not.
fn flush(
    send: &mut SendBatch,
    socket: &UdpSocket,
    io: &mut Io,
    counters: &mut DaemonCounters,
) -> io::Result<()> {
    let done = io.flush(socket.as_raw_fd(), send)?;
    counters.sent += done.sent as u64;
    counters.send_failures += done.failed as u64;
    Ok(())
}
