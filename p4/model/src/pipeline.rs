//! The pipeline: `switchml.p4`'s ingress control, pass by pass, then the traffic manager
//! and egress.
//!
//! Every packet takes pass 0; a Contribution takes one more pass per further block of
//! [`VALUES_PER_PASS`] values, and if it answers, one more per block but the last to read
//! the values back (next_step_selector.rs); a Join or Leave that ends its job's run takes
//! one more pass to clear the run's session. The model runs a packet's passes back to back; the hardware
//! would let other packets in between (see `p4/README.md`, known gaps).
//!
//! ```text
//!  (CPU port: packet_out; forward: out of its port as it is, else as from its port)
//!  frame ─▶ Parser ─▶ Validator ─┬─ Join, Status, Cookie not from the CPU port: to the CPU
//!                                │   port behind packet_in (the controller, controller.rs)
//!                                └─ Classifier ─┬─ Contribution: RunTracker ─▶ UseChecker
//!                                              │   ─▶ CountChecker ─▶ BitmapChecker
//!                                              │   ─▶ WorkersCounter ─▶ NextStepSelector
//!                                              │   ─▶ Processors (one block per pass)
//!                                              │   ─▶ Exponents, OverflowFlag (last block)
//!                                              ├─ Join (from the CPU port): JoinHandler
//!                                              │   ─▶ RunTracker (restart: + a pass to end
//!                                              │   the run; a child's Join up: to the CPU
//!                                              │   port, for the controller to sign)
//!                                              ├─ Probe: RunTracker ─▶ ProbeHandler
//!                                              │   (+ read actions)
//!                                              ├─ Abort: RunTracker (ends the run), pass on
//!                                              │   (a child's parent's: + a pass to end
//!                                              │   the run, ParentFailed down; a child's
//!                                              │   run that ends owes an Abort up: poll_up)
//!                                              ├─ Leave: RunTracker (last one: + a pass)
//!                                              ├─ Result (a child's parent's): RunTracker
//!                                              │   ─▶ ParentResult ─▶ the slot's reads
//!                                              │   ─▶ Relay ─▶ Processors (store), down
//!                                              └─ JoinReply (likewise): RunTracker
//!  (TierSelector before the Classifier: a Result's or JoinReply's child job, the job's
//!  tier; at a child a completed use, a resend in n and a Join may go Up instead)
//!        ─▶ ReplyBuilder ─▶ DropCounters/JobCounters ─▶ Replication ─▶ UdpSender
//!        ─▶ CongestionMarker (a Result by a deep queue: CONGESTED, frames only) ─▶ out
//!        (TNA: job_overflows in the egress: JobCounters::result, from the Result's flags)
//! ```

use switchml_core::switch::{DropReason, Switch};
use switchml_core::wire::{AbortReason, Flags, RANK_ALL};

use crate::bitmap_checker::BitmapChecker;
use crate::classifier::{Classification, Classifier, JobEntry, Source};
use crate::congestion_marker::{CongestionMarker, EgressQueues};
use crate::controller::Control;
use crate::count_checker::CountChecker;
use crate::drop_counters::{DropCounters, Tally};
use crate::exponents::Exponents;
use crate::headers::{
    AbortHeader, Body, DataHeader, Headers, JoinHeader, LeaveHeader, Prefix, ProbeHeader,
};
use crate::headers::{PacketIn, CPU_HEADER_LEN, CPU_PORT, TRANSPORT_LEN};
use crate::job_counters::{JobCounters, JobEvent};
use crate::join_handler::{full_mask, JoinDecision, JoinHandler};
use crate::liveness::Liveness;
use crate::next_step_selector::{NextStepSelector, Outcome};
use crate::overflow_flag::OverflowFlag;
use crate::parser::{Parser, ParserError};
use crate::probe_handler::{ProbeDecision, ProbeHandler};
use crate::processor::Update;
use crate::processors::Processors;
use crate::register::{Hazard, Pass, PassClock};
use crate::relay::Relay;
use crate::replication::{Replica, Replication};
use crate::reply_builder::{Members, ReplyBuilder, ResultFields};
use crate::run_tracker::{JoinStep, LeaveStep, ParentCell, RunTracker, Shape};
use crate::tier_selector::TierSelector;
use crate::udp_sender::{SwitchAddr, UdpSender};
use crate::use_checker::{Use, UseChecker};
use crate::validator::{Message, Validator};
use crate::workers_counter::WorkersCounter;
use crate::{MAX_COUNT, VALUES_PER_PASS};

mod abort;
mod parent;

pub use abort::UpAbort;

/// The output buffer a bare datagram needs: the reference switch's.
pub const OUT_LEN: usize = Switch::<'static, { MAX_COUNT as usize }, 1, 1>::OUT_LEN;
/// The output buffer a frame needs.
pub const FRAME_OUT_LEN: usize = TRANSPORT_LEN + OUT_LEN;

/// Sizes and addresses, fixed at construction: nothing is allocated per packet.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Aggregator slots in the pool.
    pub slots: usize,
    /// Job table entries (and multicast groups).
    pub jobs: usize,
    /// Worker table entries.
    pub workers: usize,
    /// The epoch announced in replies.
    pub epoch: u32,
    /// The largest count accepted and announced in JoinReplies (the `switch_config`
    /// table's `max_count`); above [`MAX_COUNT`], what the registers hold, it is
    /// [`MAX_COUNT`].
    pub max_count: u16,
    /// The switch's own addresses.
    pub switch: SwitchAddr,
}

/// What to do with the packet the pipeline wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to send; dropped and counted for this reason.
    Drop(DropReason),
    /// Nothing to send; absorbed into a slot.
    Consumed,
    /// Send `out[..len]` out of `port`, to `rank` of `job`.
    Unicast {
        /// The job.
        job: u16,
        /// The destination rank.
        rank: u16,
        /// The egress port (the ingress port).
        port: u16,
        /// Bytes written.
        len: usize,
    },
    /// Replicate `out[..len]` to multicast `group`, every worker of `job`.
    Multicast {
        /// The job.
        job: u16,
        /// The multicast group.
        group: u16,
        /// Bytes written.
        len: usize,
    },
    /// Send `out[..len]` to the parent switch of a child's job (protocol.md §7), out of
    /// `port`.
    Up {
        /// The parent's job id (the message is for that job).
        job: u16,
        /// The egress port (the parent's, from table `parent_link`).
        port: u16,
        /// Bytes written.
        len: usize,
    },
    /// Send `out[..len]`, a `packet_in` header and the frame, to the controller on the CPU
    /// `port` (protocol.md §4.2): a Join, Status or Cookie that did not come from it, or a
    /// child's Join up for the controller to sign.
    ToCpu {
        /// The CPU port.
        port: u16,
        /// Bytes written.
        len: usize,
    },
    /// The controller's own answer, from the CPU port: send `out[..len]` out of `port` as
    /// it is (not counted: the controller counted it).
    Forward {
        /// The egress port the `packet_out` header names.
        port: u16,
        /// Bytes written.
        len: usize,
    },
    /// Not switchml traffic: not counted as received, only as ignored.
    NotSwitchml,
    /// A register was accessed against the hardware's rule: a bug in the model.
    Fault(Hazard),
}

/// The switch: data plane in this file, control plane in `control_plane.rs`.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub(crate) config: Config,
    pub(crate) clock: PassClock,
    pub(crate) classifier: Classifier,
    pub(crate) use_checker: UseChecker,
    pub(crate) count_checker: CountChecker,
    pub(crate) bitmap_checker: BitmapChecker,
    pub(crate) workers_counter: WorkersCounter,
    pub(crate) exponents: Exponents,
    pub(crate) processors: Processors,
    pub(crate) overflow_flag: OverflowFlag,
    pub(crate) run_tracker: RunTracker,
    pub(crate) liveness: Liveness,
    pub(crate) tier_selector: TierSelector,
    pub(crate) relay: Relay,
    pub(crate) reply_builder: ReplyBuilder,
    pub(crate) drop_counters: DropCounters,
    pub(crate) job_counters: JobCounters,
    pub(crate) replication: Replication,
    pub(crate) udp_sender: UdpSender,
    /// The egress's queue-depth mark (`congestion_marker.p4`) and the depths it reads.
    pub(crate) congestion_marker: CongestionMarker,
    pub(crate) egress_queues: EgressQueues,
    /// The clone of the packet that ended a child's run: the Abort it owes its parent.
    pub(crate) up: Option<UpAbort>,
    /// The CPU port, where the controller is (TNA: `switch_config`'s; v1model: `CPU_PORT`).
    pub(crate) cpu_port: u16,
    /// The controller's cookies, when it checks them (`controller.rs`).
    pub(crate) cookies: Option<crate::controller::CookieCheck>,
    /// The controller's parent cookies and last Joins up, one per job table entry.
    pub(crate) parent_cookies: Vec<crate::controller::ParentCookie>,
    /// Mark every counted Contribution `CONGESTED` (protocol.md §6.3), as the reference's
    /// `Switch::set_congested` does: the software daemon's mark from its socket's send
    /// backlog (`--mark-backlog`) when it serves the model, through
    /// `ControlPlane::set_congested`. No P4 program has it: they mark each copy of a
    /// Result from its egress queue's depth instead (`congestion_marker`).
    pub(crate) congested: bool,
}

impl Pipeline {
    /// Build the pipeline with every register and table allocated.
    pub fn new(mut config: Config) -> Self {
        config.max_count = config.max_count.min(MAX_COUNT);
        let versions = 2 * config.slots;
        Pipeline {
            config,
            clock: PassClock::default(),
            classifier: Classifier::new(config.jobs, config.workers),
            use_checker: UseChecker::new(versions),
            count_checker: CountChecker::new(versions),
            bitmap_checker: BitmapChecker::new(config.slots),
            workers_counter: WorkersCounter::new(versions),
            exponents: Exponents::new(versions),
            processors: Processors::new(versions),
            overflow_flag: OverflowFlag::new(versions),
            run_tracker: RunTracker::new(config.jobs),
            liveness: Liveness::new(config.jobs),
            tier_selector: TierSelector::new(config.jobs),
            relay: Relay::new(versions),
            reply_builder: ReplyBuilder::new(config.epoch),
            drop_counters: DropCounters::default(),
            job_counters: JobCounters::new(config.jobs),
            replication: Replication::new(config.jobs, config.workers),
            udp_sender: UdpSender::new(config.switch),
            congestion_marker: CongestionMarker::default(),
            egress_queues: EgressQueues::default(),
            up: None,
            cpu_port: CPU_PORT,
            cookies: None,
            parent_cookies: vec![crate::controller::ParentCookie::NONE; config.jobs],
            congested: false,
        }
    }

    /// Process an Ethernet frame that arrived on `ingress_port`. A unicast answer is the
    /// finished frame in `out`; a multicast one is the frame before replication: send
    /// [`Pipeline::egress`] of it for each of [`Pipeline::replicas`] of the group. On the
    /// CPU port the frame starts with the controller's `packet_out` header; what goes to the
    /// controller starts with a `packet_in` header ([`Verdict::ToCpu`]).
    pub fn process(&mut self, ingress_port: u16, frame: &[u8], out: &mut [u8]) -> Verdict {
        let (from_cpu, ingress_port, frame) = if ingress_port == self.cpu_port {
            let Some((packet_out, inner)) = Parser::parse_packet_out(frame) else {
                self.drop_counters.ignored();
                return Verdict::NotSwitchml;
            };
            if packet_out.forward {
                let Some(copy) = out.get_mut(..inner.len()) else {
                    return Verdict::Drop(DropReason::OutputTooSmall);
                };
                copy.copy_from_slice(inner);
                return Verdict::Forward {
                    port: packet_out.port,
                    len: inner.len(),
                };
            }
            (true, packet_out.port, inner)
        } else {
            (false, ingress_port, frame)
        };
        let headers = match Parser::parse_frame(frame) {
            Err(ParserError::NotSwitchml) => {
                self.drop_counters.ignored();
                return Verdict::NotSwitchml;
            }
            other => other,
        };
        // Every datagram once: a Join the controller sends back was counted when it came in.
        if !from_cpu {
            self.drop_counters.received();
        }
        let verdict = match (headers, out.len() >= FRAME_OUT_LEN) {
            (_, false) => Verdict::Drop(DropReason::OutputTooSmall),
            (Err(_), true) => Verdict::Drop(DropReason::Malformed),
            (Ok(h), true) => {
                let t = h.transport.unwrap_or_default();
                let source = Source {
                    ip: t.ipv4.src,
                    udp_port: t.udp.src_port,
                };
                let (head, body) = out.split_at_mut(TRANSPORT_LEN);
                let v = self.ingress(&h, source, ingress_port, from_cpu, body);
                match v {
                    Verdict::Unicast { len, .. } => self.udp_sender.reflect(&t, len, head),
                    Verdict::Multicast { .. } => head.copy_from_slice(&frame[..TRANSPORT_LEN]),
                    Verdict::Up { job, len, .. } => {
                        let to = self.tier_selector.parent_of(job);
                        self.udp_sender.replicate(&to, len, head);
                    }
                    _ => {}
                }
                // The egress of what leaves by one port: a Result marked if that port's
                // queue is deep (a multicast's copies are marked in `egress`).
                if let Verdict::Unicast { port, len, .. } | Verdict::Up { port, len, .. } = v {
                    if let Some(datagram) = body.get_mut(..len) {
                        let depth = self.egress_queues.depth(port);
                        self.congestion_marker.apply(depth, datagram);
                    }
                }
                match v {
                    Verdict::ToCpu { port, .. } => self.to_cpu(
                        PacketIn {
                            port: ingress_port,
                            up: false,
                        },
                        port,
                        frame,
                        out,
                    ),
                    // A child's Join up goes to the controller, which signs it (§4.2, §7).
                    Verdict::Up { port, len, .. } if matches!(h.body, Body::Join(_)) => {
                        // The frame moves behind its packet_in header, in place.
                        let len = CPU_HEADER_LEN + TRANSPORT_LEN + len;
                        let Some(out) = out.get_mut(..len) else {
                            return self.finish(Verdict::Drop(DropReason::OutputTooSmall), 0);
                        };
                        out.copy_within(..len - CPU_HEADER_LEN, CPU_HEADER_LEN);
                        out[..CPU_HEADER_LEN]
                            .copy_from_slice(&PacketIn { port, up: true }.to_bytes());
                        Verdict::ToCpu {
                            port: self.cpu_port,
                            len,
                        }
                    }
                    v => v,
                }
            }
        };
        self.finish(verdict, TRANSPORT_LEN)
    }

    /// Write `packet_in` and `frame` into `out` for the CPU port `port`.
    fn to_cpu(&self, packet_in: PacketIn, port: u16, frame: &[u8], out: &mut [u8]) -> Verdict {
        let len = CPU_HEADER_LEN + frame.len();
        let Some(out) = out.get_mut(..len) else {
            return Verdict::Drop(DropReason::OutputTooSmall);
        };
        out[..CPU_HEADER_LEN].copy_from_slice(&packet_in.to_bytes());
        out[CPU_HEADER_LEN..].copy_from_slice(frame);
        Verdict::ToCpu { port, len }
    }

    /// Process a bare switchml datagram (the `Aggregator` path): it is classified as
    /// coming from [`Source::rank_port`] of its rank field, and arrives on port = rank. What
    /// the pipeline sends the CPU port, the controller (`controller.rs`) takes in the same
    /// call: its answer or drop is the verdict, or the Join it admits comes back as from the
    /// same port; a child's Join up leaves signed.
    pub fn process_datagram(&mut self, datagram: &[u8], out: &mut [u8]) -> Verdict {
        self.drop_counters.received();
        if out.len() < OUT_LEN {
            return self.finish(Verdict::Drop(DropReason::OutputTooSmall), 0);
        }
        let Ok(h) = Parser::parse_datagram(datagram) else {
            return self.finish(Verdict::Drop(DropReason::Malformed), 0);
        };
        let rank = h.prefix.rank;
        let source = Source::rank_port(rank);
        let mut verdict = self.ingress(&h, source, rank, false, out);
        if let Verdict::ToCpu { .. } = verdict {
            self.drop_counters.tally(Tally::ToCpu);
            verdict = match self.control(datagram, None, out) {
                Control::Inject => self.ingress(&h, source, rank, true, out),
                Control::Answer { job, rank, len } => {
                    // Sent as it is: the controller counted it.
                    return Verdict::Unicast {
                        job,
                        rank,
                        port: rank,
                        len,
                    };
                }
                Control::Drop(reason) => return Verdict::Drop(reason),
            };
        }
        if let Verdict::Up { len, .. } = verdict {
            if matches!(h.body, Body::Join(_)) && self.sign_up(&mut out[..len], false).is_none() {
                verdict = Verdict::Fault(Hazard::Index("parent_link"));
            }
        }
        self.finish(verdict, 0)
    }

    /// Return the replicas of multicast `group`.
    pub fn replicas(&self, group: u16) -> &[Replica] {
        self.replication.replicas(group)
    }

    /// Egress for one replica: write the frame for `replica` of the multicast `packet`
    /// (as [`Pipeline::process`] left it) into `out`; return its length, or `None` if
    /// the replica's worker is gone or `out` is too short. A Result is marked `CONGESTED`
    /// if the replica's port's queue is deep (`congestion_marker.rs`), this copy only.
    pub fn egress(&self, replica: Replica, packet: &[u8], out: &mut [u8]) -> Option<usize> {
        let worker = self.classifier.worker(replica.rid)?;
        let datagram = packet.get(TRANSPORT_LEN..)?;
        let len = TRANSPORT_LEN + datagram.len();
        let out = out.get_mut(..len)?;
        out[TRANSPORT_LEN..].copy_from_slice(datagram);
        self.udp_sender
            .replicate(&worker.addr, datagram.len(), &mut out[..TRANSPORT_LEN]);
        let depth = self.egress_queues.depth(replica.port);
        self.congestion_marker
            .apply(depth, &mut out[TRANSPORT_LEN..]);
        Some(len)
    }

    /// Count the verdict; add `extra` header bytes to an answer's length.
    fn finish(&mut self, verdict: Verdict, extra: usize) -> Verdict {
        let tally = match verdict {
            Verdict::Drop(reason) => Tally::Drop(reason),
            Verdict::Consumed => Tally::Consumed,
            Verdict::Multicast { .. } => Tally::Multicast,
            Verdict::Unicast { .. } => Tally::Unicast,
            Verdict::Up { .. } => Tally::Up,
            Verdict::ToCpu { .. } => Tally::ToCpu,
            Verdict::NotSwitchml | Verdict::Forward { .. } => return verdict,
            Verdict::Fault(_) => {
                self.drop_counters.fault();
                return verdict;
            }
        };
        self.drop_counters.tally(tally);
        match verdict {
            Verdict::Unicast {
                job,
                rank,
                port,
                len,
            } => Verdict::Unicast {
                job,
                rank,
                port,
                len: len + extra,
            },
            Verdict::Multicast { job, group, len } => Verdict::Multicast {
                job,
                group,
                len: len + extra,
            },
            Verdict::Up { job, port, len } => Verdict::Up {
                job,
                port,
                len: len + extra,
            },
            other => other,
        }
    }

    /// The ingress control after the parser, for a packet that came in on `port` (or from
    /// the CPU port, `from_cpu`, naming `port`); `out` receives the switchml answer.
    fn ingress(
        &mut self,
        h: &Headers<'_>,
        source: Source,
        port: u16,
        from_cpu: bool,
        out: &mut [u8],
    ) -> Verdict {
        // A Result or JoinReply is taken only by the child job its parent's job serves
        // (table `child_job`), and checked only then; an Abort of that job is the
        // parent's, any other a worker's (§7).
        let child = match h.body {
            Body::Result(_) | Body::JoinReply(_) | Body::Abort(_) => self
                .tier_selector
                .child_of(h.prefix.job)
                .and_then(|i| self.classifier.entry(i)),
            _ => None,
        };
        if child.is_none() && matches!(h.body, Body::Result(_) | Body::JoinReply(_)) {
            return Verdict::Drop(DropReason::UnexpectedType);
        }
        let message = match Validator::apply(h) {
            Ok(m) => m,
            Err(reason) => return Verdict::Drop(reason),
        };
        // Joins, Statuses and Cookies go to the controller first (protocol.md §4.2): it
        // checks the tag and cookie a pipeline cannot compute, answers Statuses, Cookies and
        // refusals itself, and sends an admitted Join back on the CPU port. The pipeline
        // compares no key: a Join is taken from the CPU port only.
        if matches!(
            message,
            Message::Join(_) | Message::Status(_) | Message::Cookie
        ) {
            if !from_cpu {
                return Verdict::ToCpu {
                    port: self.cpu_port,
                    len: 0,
                };
            }
            if !matches!(message, Message::Join(_)) {
                // The controller answers these itself and never sends them back.
                return Verdict::Drop(DropReason::UnexpectedType);
            }
        }
        let class = self.classifier.apply(h.prefix.job, source);
        let result = match (message, child) {
            (Message::Result(d), Some(job)) => {
                self.parent_result(&h.prefix, &d, h.payload, job, out)
            }
            (Message::JoinReply(r), Some(job)) => self.parent_join_reply(&h.prefix, &r, job, out),
            (Message::Abort(a), Some(job)) => self.parent_abort(&h.prefix, &a, job, out),
            (message, _) => self.worker_message(h, message, class, out),
        };
        match result {
            Ok(Verdict::Unicast { job, rank, len, .. }) => Verdict::Unicast {
                job,
                rank,
                port,
                len,
            },
            Ok(v) => v,
            Err(hazard) => Verdict::Fault(hazard),
        }
    }

    /// A message from a worker.
    fn worker_message(
        &mut self,
        h: &Headers<'_>,
        message: Message,
        class: Classification,
        out: &mut [u8],
    ) -> Result<Verdict, Hazard> {
        match message {
            Message::Contribution(d) => self.contribution(&h.prefix, &d, h.payload, class, out),
            Message::Join(j) => self.join(&h.prefix, &j, class, out),
            Message::Probe(p) => self.probe(&h.prefix, &p, class, out),
            Message::Abort(a) => self.abort(&h.prefix, &a, class, h.datagram, out),
            Message::Leave(l) => self.leave(&h.prefix, &l, class),
            Message::Status(_) | Message::Cookie | Message::Result(_) | Message::JoinReply(_) => {
                Ok(Verdict::Drop(DropReason::UnexpectedType))
            }
        }
    }

    /// Answer `prefix`'s sender with an Abort naming `session`: the refused message's (a
    /// Join's nonce, a Probe's session).
    fn refuse(
        &self,
        prefix: &Prefix,
        reason: AbortReason,
        detail: u16,
        session: u32,
        out: &mut [u8],
    ) -> Verdict {
        let len = self
            .reply_builder
            .abort(out, prefix.job, prefix.rank, reason, detail, session);
        unicast(prefix, len)
    }

    /// A message with a wrong key or session: counted for its job, and dropped as `reason`.
    fn unauthorized(&mut self, job: &JobEntry, reason: DropReason) -> Verdict {
        self.job_counters.count(JobEvent::Unauthorized, job.index);
        Verdict::Drop(reason)
    }

    /// protocol.md §4 steps 1–6, over as many passes as the values need; at a child
    /// switch a completed use goes up, and so does one resend in `n` of it until the
    /// parent's Result is here (§7).
    fn contribution(
        &mut self,
        prefix: &Prefix,
        d: &DataHeader,
        payload: &[u8],
        class: Classification,
        out: &mut [u8],
    ) -> Result<Verdict, Hazard> {
        let Some(job) = class.job else {
            return Ok(Verdict::Drop(DropReason::UnknownJob));
        };
        let tier = self.tier_selector.apply(job.index);
        let pass = self.clock.begin(0);
        if !self.run_tracker.admit(&pass, job.index, d.session)? {
            return Ok(self.unauthorized(&job, DropReason::BadSession));
        }
        let c = job.config;
        let member = class.member(prefix.rank);
        if let Some(m) = member {
            // Any message of the run proves its sender alive, a dropped one too (§4.3).
            self.liveness.hear(&pass, job.index, m, false)?;
        }
        let reject = if member.is_none() {
            Some(DropReason::UnknownRank)
        } else if d.count > self.config.max_count {
            Some(DropReason::CountTooLarge)
        } else if u32::from(d.ver) != d.seq & 1 {
            Some(DropReason::BadVersion)
        } else if d.slot >= c.slot_count {
            Some(DropReason::SlotRange)
        } else {
            None
        };
        if let Some(reason) = reject {
            self.job_counters.count(JobEvent::Rejected, job.index);
            return Ok(Verdict::Drop(reason));
        }
        let slot = c.slot_lo as usize + usize::from(d.slot);
        let version = 2 * slot + usize::from(d.ver);
        let bit = 1u64 << (member.unwrap_or(0) & 63);
        let parent = match tier.link() {
            Some(_) => self.run_tracker.parent_session(&pass, job.index)?,
            None => 0,
        };

        let use_ = self.use_checker.apply(&pass, version, d.session, d.seq)?;
        if use_ == Use::Stale {
            self.job_counters.count(JobEvent::Stale, job.index);
            return Ok(Verdict::Drop(DropReason::Stale));
        }
        let begin = use_ == Use::Begin;
        let count = self.count_checker.apply(&pass, version, begin, d.count)?;
        let count_ok = count == d.count;
        let seen = self
            .bitmap_checker
            .apply(&pass, slot, d.ver, bit, begin, count_ok)?;
        let countdown = self
            .workers_counter
            .apply(&pass, version, begin, c.world, seen, count_ok)?;
        let resend = countdown.complete && count_ok;
        let relay = self.relay.apply(&pass, version, begin, resend, c.world)?;
        let outcome = NextStepSelector::outcome(use_, seen, count_ok, countdown);
        // A child sends up what it would multicast, and one resend in n while the
        // parent's Result is not here; the other resends are consumed.
        let up = tier.link().copied().filter(|_| match outcome {
            Outcome::Retransmit => !relay.relayed,
            Outcome::Aggregate { last, .. } => last,
            _ => false,
        });
        if up.is_some() && outcome == Outcome::Retransmit && !relay.ask {
            return Ok(Verdict::Consumed);
        }
        let Some(update) = outcome.update() else {
            let (event, reason) = match outcome {
                Outcome::Duplicate => (JobEvent::Duplicate, DropReason::Duplicate),
                _ => (JobEvent::Rejected, DropReason::CountMismatch),
            };
            self.job_counters.count(event, job.index);
            return Ok(Verdict::Drop(reason));
        };
        // Every Contribution's non-finite kinds and congestion mark reach the Result (§5.4,
        // §6.3); a parent keeps a member's OVERFLOW too (§7).
        let kept = if tier.keeps_overflow() {
            Flags(d.flags).and(Flags::STICKY)
        } else {
            Flags(d.flags).and(Flags::CARRIED)
        };
        let kept = if self.congested {
            kept.with(Flags::CONGESTED)
        } else {
            kept
        };
        let held = self.values(
            pass,
            version,
            count,
            outcome.answers(),
            update,
            d.exp,
            kept,
            payload,
            out,
        )?;
        let sticky = held.flags;
        let mut fields = ResultFields {
            rank: prefix.rank,
            flags: sticky,
            count,
            exp: held.exp,
        };
        if let Outcome::Aggregate { last, .. } = outcome {
            self.job_counters.count(JobEvent::Contribution, job.index);
            if !last {
                return Ok(Verdict::Consumed);
            }
            self.job_counters.count(JobEvent::Completion, job.index);
        }
        if let Some(link) = up {
            // Up, as member `link.member` of the parent's run (none yet: nothing to send).
            fields.rank = link.member;
            if outcome == Outcome::Retransmit {
                fields.flags = Flags::RETRANSMIT.with(sticky);
            }
            let len = self.reply_builder.up(out, &link, parent, d, fields);
            if outcome != Outcome::Retransmit {
                // job_overflows, from the Contribution's flag byte (TNA: in the egress).
                self.job_counters.result(job.index, &out[..len]);
            }
            return Ok(if parent == 0 {
                Verdict::Consumed
            } else {
                Verdict::Up {
                    job: link.job,
                    port: tier.parent_port(),
                    len,
                }
            });
        }
        Ok(match outcome {
            Outcome::Retransmit => {
                self.job_counters
                    .count(JobEvent::RetransmitReply, job.index);
                fields.flags = Flags::RETRANSMIT.with(sticky);
                let len = self.reply_builder.result(out, prefix.job, d, fields);
                unicast(prefix, len)
            }
            _ => {
                fields.rank = RANK_ALL;
                let len = self.reply_builder.result(out, prefix.job, d, fields);
                // job_overflows, from the Result's flag byte (TNA: in the egress).
                self.job_counters.result(job.index, &out[..len]);
                multicast(&job, len)
            }
        })
    }

    /// The passes over the blocks (next_step_selector.rs) of a packet whose `update`
    /// reaches version `version`, pass 0 being `pass`: consume each block, then harvest
    /// the earlier ones if the packet `answers`; the pass that consumes the last block
    /// also takes the exponent `exp` and the flags (`kept`: the packet's own flags that
    /// count, §5.4 and §7). The values leave in `out` after the data header.
    #[allow(clippy::too_many_arguments)]
    fn values(
        &mut self,
        mut pass: Pass,
        version: usize,
        count: u16,
        answers: bool,
        update: Update,
        exp: u8,
        kept: Flags,
        payload: &[u8],
        out: &mut [u8],
    ) -> Result<Held, Hazard> {
        let passes = NextStepSelector::passes(count, answers);
        let last_value_pass = NextStepSelector::last_value_pass(count);
        let values = out
            .get_mut(switchml_core::wire::data::HEADER_LEN..)
            .unwrap_or_default();
        let mut packet_flags = kept;
        let mut held = Held::default();
        for p in 0..passes {
            if p > 0 {
                pass = self.clock.begin(p as u8);
                self.drop_counters.recirculated();
            }
            if let Some((block, harvest)) = NextStepSelector::block(count, p) {
                let lo = block * VALUES_PER_PASS;
                let n = (usize::from(count) - lo).min(VALUES_PER_PASS);
                let input = payload.get(4 * lo..).unwrap_or_default();
                let output = values.get_mut(4 * lo..).unwrap_or_default();
                let update = if harvest { Update::Read } else { update };
                if self
                    .processors
                    .apply(&pass, version, block, n, update, input, output)?
                {
                    packet_flags = packet_flags.with(Flags::OVERFLOW);
                }
            }
            if p == last_value_pass {
                held.exp = self.exponents.apply(&pass, version, update, exp)?;
                let flags = self
                    .overflow_flag
                    .apply(&pass, version, update, packet_flags.0)?;
                held.flags = Flags(flags);
            }
        }
        Ok(held)
    }

    /// A Join: the join handler's checks, then the run tracker (protocol.md §4.1).
    fn join(
        &mut self,
        prefix: &Prefix,
        j: &JoinHeader,
        class: Classification,
        out: &mut [u8],
    ) -> Result<Verdict, Hazard> {
        let Some(job) = class.job else {
            return Ok(self.refuse(prefix, AbortReason::UnknownJob, 0, j.nonce, out));
        };
        let max_count = self.config.max_count;
        let tier = self.tier_selector.apply(job.index);
        let world = tier.wire_world(job.config.world);
        let member = class.member(prefix.rank);
        let rank = match JoinHandler::apply(&job, world, member, j, max_count) {
            JoinDecision::Refuse(reason, detail) => {
                if member.is_some() {
                    self.note_refusal(&job, prefix.rank);
                }
                return Ok(self.refuse(prefix, reason, detail, j.nonce, out));
            }
            JoinDecision::Run { rank } => rank,
        };
        let pass = self.clock.begin(0);
        let mut parent = ParentCell::default();
        Ok(
            match self.run_tracker.join(&pass, &job, rank, j, &mut parent)? {
                JoinStep::Member {
                    opened,
                    session,
                    joined,
                    was_complete,
                } => {
                    if opened {
                        self.job_counters.count(JobEvent::Run, job.index);
                        self.liveness.opened(job.index);
                    }
                    self.liveness.hear(&pass, job.index, rank, opened)?;
                    self.job_counters.count(JobEvent::Join, job.index);
                    let c = job.config;
                    // A child's run is complete when its parent's is (§7): a Join of a run
                    // complete here goes up until the parent says so.
                    if let Some(link) = tier.link().filter(|_| was_complete && !parent.complete) {
                        let len = self.reply_builder.join_up(out, link, j, session);
                        return Ok(Verdict::Up {
                            job: link.job,
                            port: tier.parent_port(),
                            len,
                        });
                    }
                    let child = tier.link().is_some();
                    let complete = joined == full_mask(c.world) && (!child || parent.complete);
                    // The Join that completes the run tells every rank (at a child, the
                    // parent's COMPLETE does).
                    let to_all = complete && !was_complete && !child;
                    let to = if to_all { RANK_ALL } else { prefix.rank };
                    let len = self.reply_builder.join_reply(
                        out,
                        prefix.job,
                        to,
                        world,
                        complete,
                        max_count,
                        c.slot_count,
                        session,
                        j.nonce,
                        Shape {
                            lane_slots: j.slot_count,
                            count: j.count,
                        },
                        Members::new(joined, tier.rank_lo()),
                    );
                    if to_all {
                        multicast(&job, len)
                    } else {
                        unicast(prefix, len)
                    }
                }
                JoinStep::EndsRun { session } => {
                    // A new process of a rank of the complete run: a second pass ends the run,
                    // and every rank learns why. The new process's next Join opens the next.
                    let pass = self.clock.begin(1);
                    self.drop_counters.recirculated();
                    let parent = self.run_tracker.end(&pass, job.index, session)?;
                    self.job_counters.count(JobEvent::Abort, job.index);
                    let reason = AbortReason::RankRestarted;
                    // A child's run that ends ends the whole job's: the parent hears (§7).
                    self.owe_up(&tier, parent, reason);
                    let len = self.reply_builder.abort(
                        out,
                        prefix.job,
                        RANK_ALL,
                        reason,
                        prefix.rank,
                        session,
                    );
                    multicast(&job, len)
                }
                JoinStep::LaneMismatch(detail) => {
                    self.note_refusal(&job, prefix.rank);
                    self.refuse(prefix, AbortReason::LaneMismatch, detail, j.nonce, out)
                }
                JoinStep::ChunkMismatch(detail) => {
                    self.note_refusal(&job, prefix.rank);
                    self.refuse(prefix, AbortReason::ChunkMismatch, detail, j.nonce, out)
                }
                JoinStep::LaneCountMismatch(detail) => {
                    self.note_refusal(&job, prefix.rank);
                    self.refuse(prefix, AbortReason::LaneCountMismatch, detail, j.nonce, out)
                }
            },
        )
    }

    fn probe(
        &mut self,
        prefix: &Prefix,
        p: &ProbeHeader,
        class: Classification,
        out: &mut [u8],
    ) -> Result<Verdict, Hazard> {
        let Some(job) = class.job else {
            return Ok(self.refuse(prefix, AbortReason::UnknownJob, 0, p.session, out));
        };
        let tier = self.tier_selector.apply(job.index);
        let world = tier.wire_world(job.config.world);
        let pass = self.clock.begin(0);
        let admitted = self.run_tracker.admit(&pass, job.index, p.session)?;
        let slot = match ProbeHandler::apply(&job, world, admitted, class.rank(prefix.rank), p) {
            ProbeDecision::Refuse(reason, detail) => {
                if reason == AbortReason::SessionEnded {
                    self.job_counters.count(JobEvent::Unauthorized, job.index);
                }
                return Ok(self.refuse(prefix, reason, detail, p.session, out));
            }
            ProbeDecision::Read { slot } => slot,
        };
        if let Some(m) = class.member(prefix.rank) {
            // A Probe is also the keep-alive of a lane with nothing to send (§4.3).
            self.liveness.hear(&pass, job.index, m, false)?;
        }
        self.job_counters.count(JobEvent::Probe, job.index);
        let version = 2 * slot + usize::from(p.ver);
        let seq = self.use_checker.probe(&pass, version, p.session)?;
        let seen = self.bitmap_checker.probe(&pass, slot, p.ver)?;
        let remaining = self.workers_counter.probe(&pass, version)?;
        let len = self.reply_builder.probe_reply(
            out,
            prefix.job,
            prefix.rank,
            p.slot,
            p.ver,
            ProbeHandler::report(seq, remaining, seen),
            world,
            tier.rank_lo(),
            p.session,
        );
        Ok(unicast(prefix, len))
    }

    /// A worker's Abort: pass it on to the job unchanged; the run ends (and a child owes
    /// its parent an Abort, [`Pipeline::poll_up`]).
    fn abort(
        &mut self,
        prefix: &Prefix,
        a: &AbortHeader,
        class: Classification,
        datagram: &[u8],
        out: &mut [u8],
    ) -> Result<Verdict, Hazard> {
        let Some(job) = class.job else {
            return Ok(Verdict::Drop(DropReason::UnknownJob));
        };
        let rank = class.rank(prefix.rank);
        let pass = self.clock.begin(0);
        let (admitted, parent) =
            self.run_tracker
                .abort(&pass, job.index, a.session, rank.is_some())?;
        if !admitted {
            return Ok(self.unauthorized(&job, DropReason::BadSession));
        }
        if rank.is_none() {
            return Ok(Verdict::Drop(DropReason::UnknownRank));
        }
        self.job_counters.count(JobEvent::Abort, job.index);
        // A child's run that ends ends the whole job's: the parent hears (§7).
        let tier = self.tier_selector.apply(job.index);
        self.owe_up(&tier, parent, AbortReason::WorkerFailed);
        let len = datagram.len();
        out[..len].copy_from_slice(datagram);
        Ok(multicast(&job, len))
    }

    /// A rank is done with the run; the last joined rank to leave ends it, in a second pass.
    fn leave(
        &mut self,
        prefix: &Prefix,
        l: &LeaveHeader,
        class: Classification,
    ) -> Result<Verdict, Hazard> {
        let Some(job) = class.job else {
            return Ok(Verdict::Drop(DropReason::UnknownJob));
        };
        let bit = class.member(prefix.rank).map(|m| 1u64 << (m & 63));
        let pass = self.clock.begin(0);
        Ok(
            match self.run_tracker.leave(&pass, job.index, l.session, bit)? {
                LeaveStep::BadSession => self.unauthorized(&job, DropReason::BadSession),
                LeaveStep::UnknownRank => Verdict::Drop(DropReason::UnknownRank),
                LeaveStep::Left { ends } => {
                    if ends {
                        let pass = self.clock.begin(1);
                        self.drop_counters.recirculated();
                        self.run_tracker.end(&pass, job.index, l.session)?;
                    }
                    Verdict::Consumed
                }
            },
        )
    }
}

/// What the value passes leave in the version's `exp` and `flags` registers.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    exp: u8,
    flags: Flags,
}

fn unicast(prefix: &Prefix, len: usize) -> Verdict {
    Verdict::Unicast {
        job: prefix.job,
        rank: prefix.rank,
        port: 0,
        len,
    }
}

fn multicast(job: &JobEntry, len: usize) -> Verdict {
    Verdict::Multicast {
        job: job.config.id,
        group: job.group,
        len,
    }
}
