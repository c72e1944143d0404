//! The switch's front: a switch (the reference [`Switch`](super::Switch) or anything else that implements
//! [`ControlPlane`], such as the P4 model) plus what an adapter would otherwise have to
//! invent — where each lane's packets go (addresses learned from accepted Joins) and when an
//! idle run is released (protocol.md §4.1, §6). Sans-IO in the style of quinn-proto's
//! `Endpoint`: [`Endpoint::handle`] takes `now`, the sender's address and the bytes; the
//! caller sends what it says to [`Endpoint::destinations`]; [`Endpoint::poll_timeout`] and
//! [`Endpoint::handle_timeout`] expire idle runs; [`Endpoint::shutdown`] says goodbye.
//!
//! Addresses are whatever the adapter uses (`SocketAddr`, a smoltcp endpoint, a port
//! number); their storage is lent per job, so nothing here allocates. The table of a job is
//! `world × lanes` entries, lane `l` being the lane of slots `l·lane_slots ..`. Every entry
//! is tagged with the session it was learned in, so a new run never routes to an old one.
//! No address is a credential here: admission is the key and the session (§4.1).
//!
//! A job can be one level of a tree (protocol.md §7). A *child* job
//! ([`Endpoint::add_child_job`]) knows its parent switch's address: its ranks' lanes are
//! learned by global rank, what the switch sends up ([`Verdict::Up`]) goes to the parent
//! (a [`Transmit::Lanes`] with `up` set), and only Results, JoinReplies and Aborts of the
//! parent's job from that address reach the switch — nothing from the parent is taken for
//! a worker's, and no one else's is taken for the parent's. When a child's run ends with an
//! Abort to its ranks, [`Endpoint::poll_transmit`] then gives the Abort that goes up. A *parent*
//! job ([`Endpoint::add_parent_job`]) has child switches for ranks, each one address
//! (one socket): any Join of a child teaches its address for every lane, since a child
//! sends up the Join of whichever lane's worker asked.
//!
//! Liveness (protocol.md §4.3): while a run is open the endpoint sweeps every
//! `dead_after / QUIET_SWEEPS` ([`Endpoint::with_dead_after`], default
//! [`DEFAULT_DEAD_AFTER`]); [`Endpoint::poll_transmit`] then gives the Abort of each run the
//! switch ended for a silent or refused rank, to the run's lanes.
//!
//! An endpoint can be one shard of a sharded switch ([`Endpoint::with_shard`], §1.1): it
//! then answers a Join of a lane another shard serves with Abort `WrongShard`, before the
//! switch sees it, and writes the number of shards into its JoinReplies and StatusReplies.

use core::hash::Hash;

use super::{
    ControlPlane, DropReason, JobConfig, JobError, ParentLink, Tier, Verdict, QUIET_SWEEPS,
};
use crate::auth::CookieJar;
use crate::shard::Shard;
use crate::time::{Duration, Instant};
use crate::wire::{
    self, AbortPacket, AbortReason, AbortRepr, DataPacket, JoinPacket, JoinReplyPacket,
    MessageType, StatusReplyPacket,
};

/// One learned lane: where it sends from, and the run it joined.
pub type Route<A> = Option<(A, u32)>;

/// What to do with the bytes [`Endpoint::handle`] wrote into `out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transmit {
    /// Nothing to send.
    Nothing,
    /// Send `out[..len]` back to the sender.
    Reply {
        /// Bytes written.
        len: usize,
    },
    /// Send `out[..len]` to lanes of `job`'s run `session`: the lanes that drive `slot`
    /// (a Result), or every lane (`slot` is `None`); or, `up` being set, to the parent
    /// switch of the child's job `job` (protocol.md §7; `session` is then the parent's).
    Lanes {
        /// The job.
        job: u16,
        /// The run whose lanes get it.
        session: u32,
        /// The job-relative slot of a Result.
        slot: Option<u16>,
        /// Bytes written.
        len: usize,
        /// To the parent switch, not to lanes.
        up: bool,
    },
}

/// Where a job sits in a tree of switches, as its routes see it (protocol.md §7).
#[derive(Clone, Copy)]
enum Place<A> {
    /// Its ranks are workers.
    Flat,
    /// Its ranks are child switches, one address each.
    Parent,
    /// A child: its ranks start at global rank `rank_lo`; its parent's job `job` is at
    /// `parent`.
    Child {
        parent: A,
        job: u16,
        rank_lo: u16,
        /// The parent job's key, which the child's Joins up are signed with.
        key: u64,
    },
}

/// The lanes of one job.
struct JobRoutes<A, S> {
    id: u16,
    world: u16,
    place: Place<A>,
    storage: S,
    /// When the job's run last heard from a rank.
    last_heard: Option<Instant>,
    /// A child's: the parent's cookie for it, and its last Join up (protocol.md §4.2).
    up: up_join::UpJoin,
}

/// The switch with its address table and run timer; `A`: an address, `S`: a job's lent
/// table of `Route<A>`s, `G`: the switch, `JOBS`: how many jobs the table has room for.
pub struct Endpoint<A, S, G, const JOBS: usize> {
    switch: G,
    routes: [Option<JobRoutes<A, S>>; JOBS],
    idle_timeout: Duration,
    expired: u64,
    shard: Shard,
    redirected: u64,
    cookies: CookieJar,
    cookies_sent: u64,
    /// How long a rank of a run may be silent before the run ends naming it (§4.3);
    /// `None`: never.
    dead_after: Option<Duration>,
    /// When the next liveness sweep is due (armed while a run is open).
    next_sweep: Option<Instant>,
    /// The job table index the liveness sweep under way goes on with in `poll_transmit`.
    sweeping: Option<usize>,
    _address: core::marker::PhantomData<A>,
}

impl<A, S, G, const JOBS: usize> Endpoint<A, S, G, JOBS>
where
    A: Copy + PartialEq + Hash,
    S: AsRef<[Route<A>]> + AsMut<[Route<A>]>,
    G: ControlPlane,
{
    /// The output buffer length [`Endpoint::handle`] needs.
    pub const OUT_LEN: usize = G::OUT_LEN;

    /// Serve `switch`; a run nobody has sent to for `idle_timeout` is released.
    pub fn new(switch: G, idle_timeout: Duration) -> Self {
        let epoch = switch.epoch();
        Endpoint {
            switch,
            routes: [const { None }; JOBS],
            idle_timeout,
            expired: 0,
            shard: Shard::SINGLE,
            redirected: 0,
            // A stand-in secret until the adapter gives a random one: a cookie's freshness
            // and address binding do not rest on its secrecy (the tag covers the cookie).
            cookies: CookieJar::new(stand_in_secret(epoch)),
            cookies_sent: 0,
            dead_after: Some(DEFAULT_DEAD_AFTER),
            next_sweep: None,
            sweeping: None,
            _address: core::marker::PhantomData,
        }
    }

    /// Serve as shard `shard` of a sharded switch (protocol.md §1.1).
    #[must_use]
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = shard;
        self
    }

    /// Issue cookies (protocol.md §4.2) under `secret`, which the adapter draws at random
    /// when it starts.
    #[must_use]
    pub fn with_cookie_secret(mut self, secret: [u8; 32]) -> Self {
        self.cookies = CookieJar::new(secret);
        self
    }

    /// End a run when one of its ranks has been silent for `dead_after` (protocol.md
    /// §4.3; default [`DEFAULT_DEAD_AFTER`]), or never (`None`). The endpoint sweeps
    /// every `dead_after / QUIET_SWEEPS`.
    #[must_use]
    pub fn with_dead_after(mut self, dead_after: Option<Duration>) -> Self {
        self.dead_after = dead_after.filter(|d| d.total_micros() >= u64::from(QUIET_SWEEPS));
        self.next_sweep = None;
        self
    }

    /// Return the time between liveness sweeps, if the endpoint sweeps.
    fn sweep_interval(&self) -> Option<Duration> {
        let d = self.dead_after?;
        Some(Duration::from_micros(
            d.total_micros() / u64::from(QUIET_SWEEPS),
        ))
    }

    /// Return how many Cookies were sent (Joins and Statuses without a valid cookie).
    pub fn cookies_sent(&self) -> u64 {
        self.cookies_sent
    }

    /// Return which shard this endpoint is.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// Return how many Joins were sent to their lane's shard (Abort `WrongShard`).
    pub fn redirected(&self) -> u64 {
        self.redirected
    }

    /// Return the switch (its jobs and counters).
    pub fn switch(&self) -> &G {
        &self.switch
    }

    /// Mark every Contribution the switch counts from now on `CONGESTED`, or stop
    /// (protocol.md §6.3; [`crate::switch::Switch::set_congested`]). The adapter calls it
    /// when its queue toward the workers grows past a threshold and again when it drains.
    pub fn set_congested(&mut self, congested: bool) {
        self.switch.set_congested(congested);
    }

    /// Return how many runs were released for being idle.
    pub fn expired_runs(&self) -> u64 {
        self.expired
    }

    /// Register a job with its address table (`world × lanes` entries; its length decides
    /// how many lanes a rank may have).
    pub fn add_job(&mut self, config: JobConfig, storage: S) -> Result<(), JobError> {
        self.install(config, Tier::Flat, Place::Flat, storage)
    }

    /// Register the job of a parent switch, whose ranks are child switches (protocol.md
    /// §7), with its address table (`world × lanes` entries).
    pub fn add_parent_job(&mut self, config: JobConfig, storage: S) -> Result<(), JobError> {
        self.install(config, Tier::Parent, Place::Parent, storage)
    }

    /// Register a child's job (protocol.md §7) whose parent switch is at `parent`, with
    /// its address table (`world × lanes` entries, `world` being the child's own ranks).
    /// The switch must take tiered jobs ([`ControlPlane::install_tiered_job`]).
    pub fn add_child_job(
        &mut self,
        config: JobConfig,
        link: ParentLink,
        parent: A,
        storage: S,
    ) -> Result<(), JobError> {
        let place = Place::Child {
            parent,
            job: link.job,
            rank_lo: link.rank_lo,
            key: link.key,
        };
        self.install(config, Tier::Child(link), place, storage)
    }

    fn install(
        &mut self,
        config: JobConfig,
        tier: Tier,
        place: Place<A>,
        mut storage: S,
    ) -> Result<(), JobError> {
        let free = self
            .routes
            .iter()
            .position(Option::is_none)
            .ok_or(JobError::TableFull(JOBS))?;
        self.switch.install_tiered_job(config, tier)?;
        storage.as_mut().fill(None);
        self.routes[free] = Some(JobRoutes {
            id: config.id,
            world: config.world,
            place,
            storage,
            last_heard: None,
            up: up_join::UpJoin::NONE,
        });
        Ok(())
    }

    /// Remove a job; return its table.
    pub fn remove_job(&mut self, id: u16) -> Result<S, JobError> {
        self.switch.uninstall_job(id)?;
        let i = self.index(id).ok_or(JobError::UnknownJob(id))?;
        self.routes[i]
            .take()
            .map(|r| r.storage)
            .ok_or(JobError::UnknownJob(id))
    }

    fn index(&self, id: u16) -> Option<usize> {
        self.routes
            .iter()
            .position(|r| r.as_ref().is_some_and(|r| r.id == id))
    }

    /// Count a datagram the adapter dropped before handing it over.
    pub fn count_drop(&mut self, reason: DropReason) {
        self.switch.count_drop(reason);
    }

    /// Handle one datagram from `from`: the switch decides, the endpoint learns the lane of
    /// an accepted Join and says where the answer goes.
    pub fn handle(&mut self, now: Instant, from: A, bytes: &[u8], out: &mut [u8]) -> Transmit {
        if self.next_sweep.is_none() {
            self.next_sweep = self.sweep_interval().map(|i| now + i);
        }
        if let Some(t) = self.redirect(bytes, out) {
            return t;
        }
        let incoming = wire::peek(bytes).ok();
        if !self.admits(&from, incoming) {
            self.switch.count_drop(DropReason::UnexpectedType);
            return Transmit::Nothing;
        }
        if let Some(t) = self.demand_cookie(now, &from, bytes, out) {
            return t;
        }
        if let Some(t) = self.parent_cookie(&from, bytes, out) {
            return t;
        }
        let verdict = self.switch.process(bytes, out);
        let (job, len, multicast) = match verdict {
            Verdict::Drop(_) => return Transmit::Nothing,
            Verdict::Consumed => {
                if let Some((_, id, _)) = incoming {
                    self.heard(id, now);
                }
                return Transmit::Nothing;
            }
            // A child's Contribution or Join to its parent (§7), caused by a worker's
            // message of the child's job.
            Verdict::Up { len, .. } => {
                let Some((_, id, _)) = incoming else {
                    return Transmit::Nothing;
                };
                self.heard(id, now);
                if let Some(up) = out.get_mut(..len) {
                    self.sign_join_up(id, up);
                }
                let session = out
                    .get(..len)
                    .and_then(|b| wire::peek(b).ok().map(|k| (k.0, b)))
                    .map_or(0, |(kind, b)| match kind {
                        MessageType::Contribution => DataPacket::new_unchecked(b).session(),
                        _ => 0,
                    });
                return Transmit::Lanes {
                    job: id,
                    session,
                    slot: None,
                    len,
                    up: true,
                };
            }
            Verdict::Unicast { job, len, .. } => (job, len, false),
            Verdict::Multicast { job, len } => (job, len, true),
        };
        let Some(answer) = out.get_mut(..len) else {
            return Transmit::Nothing;
        };
        let kind = wire::peek(answer).map(|(k, _, _)| k).ok();
        let shards = self.shard.wire_count();
        match kind {
            Some(MessageType::JoinReply) if shards > 1 => {
                JoinReplyPacket::new_unchecked(&mut *answer).set_shards(shards)
            }
            Some(MessageType::StatusReply) if shards > 1 => {
                StatusReplyPacket::new_unchecked(&mut *answer).set_shards(shards)
            }
            _ => {}
        }
        let answer = &*answer;
        let session = match kind {
            Some(MessageType::JoinReply) => JoinReplyPacket::new_unchecked(answer).session(),
            Some(MessageType::Result) => DataPacket::new_unchecked(answer).session(),
            Some(MessageType::Abort) => AbortPacket::new_unchecked(answer).session(),
            _ => 0,
        };
        // Only a worker's Join teaches a lane: a parent's JoinReply, answered with one, is
        // no worker's.
        if kind == Some(MessageType::JoinReply)
            && incoming.is_some_and(|(k, _, _)| k == MessageType::Join)
        {
            self.learn(from, bytes, session);
        }
        // Only an answer in the job's current run shows that its ranks are there: a refusal
        // echoes whatever session the refused message named (a stranger's Probe).
        if session != 0 && self.session(job) == session {
            self.heard(job, now);
        }
        if !multicast {
            return Transmit::Reply { len };
        }
        let slot =
            (kind == Some(MessageType::Result)).then(|| DataPacket::new_unchecked(answer).slot());
        Transmit::Lanes {
            job,
            session,
            slot,
            len,
            up: false,
        }
    }

    /// Return whether a datagram of `kind` and job `id` from `from` may reach the switch:
    /// a Result, JoinReply or Abort of a child job's parent job only from that parent, and
    /// nothing else from a parent's address (§7).
    fn admits(&self, from: &A, incoming: Option<(MessageType, u16, u16)>) -> bool {
        let Some((kind, id, _)) = incoming else {
            return true;
        };
        let mut children = self.routes.iter().flatten().filter_map(|r| match r.place {
            Place::Child { parent, job, .. } => Some((parent, job)),
            _ => None,
        });
        match kind {
            // Anything else of these reaches the switch, which refuses it.
            MessageType::Result
            | MessageType::JoinReply
            | MessageType::Abort
            | MessageType::Cookie => children.all(|(parent, job)| job != id || parent == *from),
            _ => children.all(|(parent, _)| parent != *from),
        }
    }

    /// Answer a Join of a lane that another shard serves with Abort `WrongShard`, naming
    /// the number of shards and the Join's nonce (§1.1, §3.6); `None` for anything else.
    fn redirect(&mut self, bytes: &[u8], out: &mut [u8]) -> Option<Transmit> {
        if self.shard.count() <= 1 || wire::peek(bytes).ok()?.0 != MessageType::Join {
            return None;
        }
        let join = JoinPacket::new_checked(bytes).ok()?;
        // A slot count of 0 is the switch's to refuse.
        let lane = join.slot_lo().checked_div(join.slot_count())?;
        if self.shard.serves_lane(lane) {
            return None;
        }
        let repr = AbortRepr {
            job: join.job_id(),
            rank: join.rank(),
            reason: AbortReason::WrongShard,
            detail: self.shard.count(),
            epoch: self.switch.epoch(),
            session: join.nonce(),
        };
        let len = repr.buffer_len();
        repr.emit(&mut AbortPacket::new_unchecked(out.get_mut(..len)?));
        self.redirected += 1;
        Some(Transmit::Reply { len })
    }

    /// Record where the lane of the accepted Join in `bytes` sends from.
    fn learn(&mut self, from: A, bytes: &[u8], session: u32) {
        let join = JoinPacket::new_unchecked(bytes);
        let (id, rank, slot_lo) = (join.job_id(), join.rank(), join.slot_lo());
        let lane_slots = self.lane_slots(id);
        let Some(routes) = self.index(id).and_then(|i| self.routes[i].as_mut()) else {
            return;
        };
        let lanes = routes.storage.as_ref().len() / usize::from(routes.world.max(1));
        let lane = usize::from(slot_lo / lane_slots.max(1));
        // A child's ranks are global (§7): member `i` is rank `rank_lo + i`.
        let member = match routes.place {
            Place::Child { rank_lo, .. } => rank.checked_sub(rank_lo),
            _ => Some(rank),
        };
        let Some(member) = member.filter(|m| *m < routes.world) else {
            return;
        };
        // A child switch is one address for all its lanes, and sends up the Join of
        // whichever lane's worker asked.
        let learned = match routes.place {
            Place::Parent => 0..lanes,
            _ => lane..lane + 1,
        };
        let first = usize::from(member) * lanes;
        if lane < lanes {
            let entries = routes
                .storage
                .as_mut()
                .get_mut(first + learned.start..first + learned.end);
            for e in entries.into_iter().flatten() {
                *e = Some((from, session));
            }
        }
    }

    /// Return job `id`'s current session (0: no run).
    fn session(&self, id: u16) -> u32 {
        self.switch.job_snapshot(id).map_or(0, |j| j.session)
    }

    /// Return the slots per lane of job `id`'s run (0: no run).
    fn lane_slots(&self, id: u16) -> u16 {
        self.switch.job_snapshot(id).map_or(0, |j| j.lane_slots)
    }

    fn heard(&mut self, id: u16, now: Instant) {
        if let Some(r) = self.index(id).and_then(|i| self.routes[i].as_mut()) {
            r.last_heard = Some(now);
        }
    }

    /// Return where a [`Transmit`] goes (`from`: the sender of what it answers).
    pub fn destinations<'b>(
        &'b self,
        t: &Transmit,
        from: &'b A,
    ) -> impl Iterator<Item = &'b A> + 'b {
        let (reply, job) = match *t {
            Transmit::Nothing => (None, None),
            Transmit::Reply { .. } => (Some(from), None),
            Transmit::Lanes { job, up: true, .. } => (self.parent(job), None),
            Transmit::Lanes {
                job, session, slot, ..
            } => {
                let lane_slots = self.lane_slots(job);
                let routes = self.index(job).and_then(|i| self.routes[i].as_ref());
                (None, routes.map(|r| (r, session, slot, lane_slots)))
            }
        };
        let lanes = job.into_iter().flat_map(|(r, session, slot, lane_slots)| {
            let table = r.storage.as_ref();
            let per_rank = (table.len() / usize::from(r.world.max(1))).max(1);
            // A Result goes to each rank's lane of its slot (one entry per rank, `world`
            // lookups, not a scan of the table); a control message to every lane.
            let (first, step) = match slot {
                Some(s) => (usize::from(s / lane_slots.max(1)), per_rank),
                None => (0, 1),
            };
            let entries = if first < per_rank {
                table.get(first..)
            } else {
                None
            };
            entries
                .unwrap_or_default()
                .iter()
                .step_by(step)
                .filter_map(move |e| e.as_ref().filter(|(_, s)| *s == session).map(|(a, _)| a))
        });
        reply.into_iter().chain(lanes)
    }

    /// Write what the switch owes a parent since the last call into `out`: a child job's
    /// run ended (an Abort went to its ranks), and its Abort goes up too (protocol.md §7);
    /// `None` if nothing is owed. Call it after every [`Endpoint::handle`] and
    /// [`Endpoint::shutdown_run`], once what they wrote was sent.
    /// A liveness sweep that ends a run (§4.3) writes that run's Abort here too, one run
    /// a call: call it until it returns `None` after [`Endpoint::handle_timeout`].
    #[must_use]
    pub fn poll_transmit(&mut self, out: &mut [u8]) -> Option<Transmit> {
        match self.switch.poll_up(out) {
            Some(Verdict::Up { job, len }) => self.up_transmit(job, len, out),
            _ => self.poll_sweep(out),
        }
    }

    /// Go on with the liveness sweep under way: the Abort of the next run it ends.
    fn poll_sweep(&mut self, out: &mut [u8]) -> Option<Transmit> {
        while let Some(i) = self.sweeping {
            self.sweeping = (i + 1 < JOBS).then_some(i + 1);
            let Some(id) = self.routes.get(i).and_then(|r| r.as_ref()).map(|r| r.id) else {
                continue;
            };
            let session = self.session(id);
            if let Some(Verdict::Multicast { job, len }) = self.switch.sweep(id, out) {
                return Some(Transmit::Lanes {
                    job,
                    session,
                    slot: None,
                    len,
                    up: false,
                });
            }
        }
        None
    }

    /// The Abort a child's job owes its parent, as a transmit up.
    fn up_transmit(&self, job: u16, len: usize, out: &[u8]) -> Option<Transmit> {
        let child = self.routes.iter().flatten().find_map(|r| match r.place {
            Place::Child { job: j, .. } if j == job => Some(r.id),
            _ => None,
        })?;
        let session = AbortPacket::new_checked(out.get(..len)?).ok()?.session();
        Some(Transmit::Lanes {
            job: child,
            session,
            slot: None,
            len,
            up: true,
        })
    }

    /// Return the address of the parent of child job `id`.
    fn parent(&self, id: u16) -> Option<&A> {
        let r = self.index(id).and_then(|i| self.routes[i].as_ref())?;
        match &r.place {
            Place::Child { parent, .. } => Some(parent),
            _ => None,
        }
    }

    /// Return the address of the parent switch of child job `id`, if it is a child's.
    pub fn parent_of(&self, id: u16) -> Option<A> {
        self.parent(id).copied()
    }

    /// Return when [`Endpoint::handle_timeout`] should next run: the earliest moment an
    /// open run has been idle for the idle timeout.
    /// While a run is open and the endpoint sweeps, the next liveness sweep (§4.3) too.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let open = || {
            self.routes
                .iter()
                .flatten()
                .filter(|r| self.session(r.id) != 0)
        };
        let idle = open()
            .filter_map(|r| r.last_heard)
            .map(|t| t + self.idle_timeout)
            .min();
        let sweep = self.next_sweep.filter(|_| open().next().is_some());
        match (idle, sweep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Release every run that has been idle for the idle timeout. Its ranks are not told:
    /// an idle run's ranks are gone, or will hear `SessionEnded` when they probe. When a
    /// liveness sweep is due, start it: [`Endpoint::poll_transmit`] then writes the Abort
    /// of each run it ends (§4.3).
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.next_sweep.is_some_and(|t| t <= now) {
            self.sweeping = Some(0);
            self.next_sweep = self.sweep_interval().map(|i| now + i);
        }
        for r in self.routes.iter_mut().flatten() {
            let idle = r.last_heard.is_some_and(|t| t + self.idle_timeout <= now);
            if idle && self.switch.end_run(r.id) {
                self.expired += 1;
                r.last_heard = None;
            }
        }
    }

    /// Stopping: write the Abort `Shutdown` for the next job with a run into `out` and
    /// return it; `None` once every run has been told.
    pub fn shutdown(&mut self, out: &mut [u8]) -> Option<Transmit> {
        let ids = self.routes.iter().flatten().map(|r| r.id);
        for id in ids.collect::<heapless::Vec<u16, JOBS>>() {
            if let Some(t) = self.shutdown_run(id, crate::wire::AbortReason::Shutdown, out) {
                return Some(t);
            }
        }
        None
    }

    /// End job `id`'s run, if it has one: write the Abort its lanes get for `reason`
    /// (`JobRemoved` before removing a job, `Shutdown` when stopping) into `out` and return
    /// it.
    pub fn shutdown_run(
        &mut self,
        id: u16,
        reason: crate::wire::AbortReason,
        out: &mut [u8],
    ) -> Option<Transmit> {
        let session = self.session(id);
        match self.switch.shutdown_run(id, reason, out)? {
            Verdict::Multicast { job, len } => Some(Transmit::Lanes {
                job,
                session,
                slot: None,
                len,
                up: false,
            }),
            _ => None,
        }
    }
}

/// How long a rank of a run may be silent before the switch ends the run naming it
/// (protocol.md §4.3): six of the workers' keep-alive intervals (250 ms).
pub const DEFAULT_DEAD_AFTER: Duration = Duration::from_millis(1500);

/// The cookie secret of an endpoint that was given none: distinct per switch incarnation.
fn stand_in_secret(epoch: u32) -> [u8; 32] {
    let mut s = [0x5Au8; 32];
    s[..4].copy_from_slice(&epoch.to_be_bytes());
    s
}

mod admission;
#[cfg(test)]
mod liveness;
#[cfg(test)]
mod tiers;
mod up_join;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::{Slot, Switch};
    use crate::wire::{DataKind, DataRepr, Flags, JoinRepr, RANK_ALL};

    pub(super) type TestEndpoint<'a> = Endpoint<u32, [Route<u32>; 4], Switch<'a, 8, 1, 2>, 2>;
    pub(super) const OUT: usize = Switch::<8, 1, 2>::OUT_LEN;

    pub(super) fn join(rank: u16, slot_lo: u16, nonce: u32) -> [u8; 44] {
        let mut b = [0u8; 44];
        JoinRepr {
            job: 7,
            rank,
            world: 2,
            slot_lo,
            slot_count: 2,
            count: 1,
            lanes: 2,
            nonce,
            cookie: 0,
            tag: [0; 16],
        }
        .sign(9)
        .emit(&mut JoinPacket::new_unchecked(&mut b[..]));
        b
    }

    fn contribution(rank: u16, slot: u16, session: u32) -> [u8; 28] {
        let mut b = [0u8; 28];
        DataRepr {
            kind: DataKind::Contribution,
            job: 7,
            rank,
            slot,
            ver: 0,
            flags: Flags::default(),
            count: 1,
            seq: 0,
            exp: 0,
            session,
        }
        .emit(&mut DataPacket::new_unchecked(&mut b[..]));
        b
    }

    /// Job 7: two ranks on slots 0..4, key 9.
    pub(super) const JOB_7: JobConfig = JobConfig {
        id: 7,
        world: 2,
        slot_lo: 0,
        slot_count: 4,
        key: 9,
    };

    /// An endpoint over `pool` serving job 7 (2 ranks, 4 slots, key 9).
    fn endpoint(pool: &mut [Slot<8, 1>], idle_secs: u64) -> TestEndpoint<'_> {
        // Idle expiry alone: these ranks are not driven between messages (`liveness.rs`
        // tests the dead rule).
        let mut e = Endpoint::new(Switch::new(pool, 1), Duration::from_secs(idle_secs))
            .with_dead_after(None);
        let config = JobConfig {
            id: 7,
            world: 2,
            slot_lo: 0,
            slot_count: 4,
            key: 9,
        };
        e.add_job(config, [None; 4]).unwrap();
        e
    }

    pub(super) fn dests(e: &TestEndpoint<'_>, t: &Transmit, from: u32) -> heapless::Vec<u32, 8> {
        e.destinations(t, &from).copied().collect()
    }

    #[test]
    fn lanes_are_learned_from_joins_and_results_go_to_the_lanes_of_their_slot() {
        let mut pool = [Slot::IDLE; 4];
        let mut e = endpoint(&mut pool, 60);
        let mut out = [0u8; OUT];
        let t0 = Instant::from_millis(0);
        // Rank 0 from addresses 10 (slots 0..2) and 11 (slots 2..4); rank 1 from 20 and 21.
        assert!(matches!(
            e.handle_admitted(t0, 10, &join(0, 0, 5), &mut out),
            Transmit::Reply { .. }
        ));
        e.handle_admitted(t0, 11, &join(0, 2, 5), &mut out);
        let t = e.handle_admitted(t0, 20, &join(1, 0, 6), &mut out);
        assert_eq!(
            dests(&e, &t, 20),
            [10, 11, 20],
            "COMPLETE goes to every lane"
        );
        let t = e.handle_admitted(t0, 21, &join(1, 2, 6), &mut out);
        assert_eq!(dests(&e, &t, 21), [21], "a late lane hears it alone");
        e.handle_admitted(t0, 11, &contribution(0, 3, 5), &mut out);
        let t = e.handle_admitted(t0, 21, &contribution(1, 3, 5), &mut out);
        assert!(matches!(t, Transmit::Lanes { slot: Some(3), .. }));
        assert_eq!(dests(&e, &t, 21), [11, 21]);
        // A stranger gets nothing routed and teaches nothing.
        let forged = e.handle_admitted(t0, 99, &contribution(0, 1, 6), &mut out);
        assert_eq!(forged, Transmit::Nothing);
        // Idle runs are released after the timeout, not before.
        assert_eq!(e.poll_timeout(), Some(t0 + Duration::from_secs(60)));
        e.handle_timeout(t0 + Duration::from_secs(59));
        assert!(e.switch().job(7).unwrap().has_run());
        e.handle_timeout(t0 + Duration::from_secs(60));
        assert!(!e.switch().job(7).unwrap().has_run());
        assert_eq!((e.expired_runs(), e.poll_timeout()), (1, None));
        // A new run routes only to its own lanes.
        e.handle_admitted(t0, 30, &join(0, 0, 8), &mut out);
        let t = e.handle_admitted(t0, 40, &join(1, 0, 9), &mut out);
        assert_eq!(dests(&e, &t, 40), [30, 40]);
    }

    #[test]
    fn shutdown_tells_each_run_once() {
        let mut pool = [Slot::IDLE; 4];
        let mut e = endpoint(&mut pool, 1);
        let mut out = [0u8; OUT];
        e.handle_admitted(Instant::from_millis(0), 10, &join(0, 0, 5), &mut out);
        let t = e.shutdown(&mut out).unwrap();
        assert_eq!(dests(&e, &t, 0), [10]);
        let a = crate::wire::AbortRepr::parse(&AbortPacket::new_unchecked(&out[..20])).unwrap();
        assert_eq!(
            (a.rank, a.reason),
            (RANK_ALL, crate::wire::AbortReason::Shutdown)
        );
        assert_eq!(e.shutdown(&mut out), None);
        assert!(e.remove_job(7).is_ok());
    }

    #[test]
    fn a_strangers_probe_does_not_keep_an_idle_run_open() {
        // A Probe of another session is refused with SessionEnded, which echoes the Probe's
        // session: that answer is no sign of the run's ranks.
        let mut pool = [Slot::IDLE; 4];
        let mut e: TestEndpoint<'_> =
            Endpoint::new(Switch::new(&mut pool, 1), Duration::from_secs(60));
        e.add_job(JOB_7, [None; 4]).unwrap();
        let mut out = [0u8; OUT];
        let t0 = Instant::from_millis(0);
        e.handle_admitted(t0, 10, &join(0, 0, 5), &mut out);
        e.handle_admitted(t0, 20, &join(1, 0, 6), &mut out);
        let mut probe = [0u8; 20];
        crate::wire::ProbeRepr {
            job: 7,
            rank: 0,
            slot: 0,
            ver: 0,
            seq: 0,
            session: 1234,
            flags: crate::wire::ProbeFlags::NONE,
        }
        .emit(&mut crate::wire::ProbePacket::new_unchecked(&mut probe[..]));
        let later = t0 + Duration::from_secs(59);
        assert!(matches!(
            e.handle_admitted(later, 99, &probe, &mut out),
            Transmit::Reply { .. }
        ));
        e.handle_timeout(t0 + Duration::from_secs(60));
        assert!(
            !e.switch().job(7).unwrap().has_run(),
            "a stranger kept it open"
        );
        assert_eq!(e.expired_runs(), 1);
    }
}
