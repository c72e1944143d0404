//! The controller of a P4 switch, for what its pipeline cannot do (protocol.md §4.2): prove
//! a job's key. No P4 twin: this is the software on the switch's CPU, which the programs
//! talk to through their CPU port (`p4/README.md`, "Joins and the controller").
//!
//! The pipeline sends every Join, Status and Cookie that did not come from the CPU port to
//! the CPU port, behind a `packet_in` header naming the port it came in on
//! ([`Verdict::ToCpu`](crate::Verdict::ToCpu)). The controller:
//!
//! - checks a Join's tag with the core's code ([`JoinRepr::verify`]) and answers a wrong
//!   one with Abort `BadKey` itself (counted in the job's `unauthorized`); a Join it admits
//!   goes back through the CPU port behind a `packet_out` header naming the same port, and
//!   the pipeline takes it as from there, comparing no key. A Join for a job the controller
//!   does not know goes back too: the pipeline's join handler answers `UnknownJob`.
//! - answers a Status itself: nothing for an unknown job or a wrong tag (counted as the
//!   reference counts them), else a StatusReply it builds from the job table, the run
//!   tracker's registers and every counter, which a control plane reads and a data plane
//!   cannot.
//! - checks the cookie of a Join or Status whose tag verified, on frames (it needs the
//!   sender's address) and when given a clock and a secret ([`CookieCheck`],
//!   [`Pipeline::set_cookie_check`]): one that is missing, stale or another address's gets
//!   a Cookie (§3.10) from the core's [`CookieJar`]. Without one, and always on bare
//!   datagrams, it checks tags only, as the reference switch does: served through the
//!   core's endpoint (`switchml switch --pipeline p4-model`), the model gets only Joins and
//!   Statuses whose cookie the endpoint already checked.
//! - takes a parent's Cookie (§3.10) that answers a child job's last Join up, on frames:
//!   it keeps the cookie, puts it in that Join, signs it again and sends it up at once, and
//!   puts it in every later Join up (as the core's endpoint does for the software switch,
//!   `core/src/switch/endpoint/admission.rs`). Any other Cookie, and every Cookie on bare
//!   datagrams (where the endpoint takes them), is dropped (`UnexpectedType`).
//! - signs a child's Join up (protocol.md §7) with the parent job's key, which the pipeline
//!   sends it unsigned (`packet_in.up`), and sends it out of the parent's port.
//!
//! What the controller answers leaves through the CPU port too, `packet_out.forward` set:
//! the pipeline sends it out of the named port unchanged, and counts nothing: the
//! controller counts what it answers and drops, which a P4 controller adds to what it reads
//! of the data plane's counters, and the model adds to the same counters.
//!
//! [`Pipeline::process_datagram`](crate::Pipeline::process_datagram) runs the exchange in
//! one call, so that the model still decides as the reference switch does;
//! [`Pipeline::control_frame`] is the controller's step on frames, which the test bed and
//! the BMv2 replay use to show the CPU port's traffic.
//!
//! [`CookieJar`]: switchml_core::auth::CookieJar

use switchml_core::auth::CookieFor;
use switchml_core::switch::DropReason;
use switchml_core::time::Instant;
use switchml_core::wire::{
    self, AbortReason, CookiePacket, CookieRepr, JoinPacket, JoinRepr, MessageType, StatusPacket,
    StatusRepr,
};

use crate::classifier::Source;

use crate::drop_counters::Tally;
use crate::headers::{PacketIn, PacketOut, CPU_HEADER_LEN, TRANSPORT_LEN};
use crate::job_counters::JobEvent;
use crate::parser::Parser;
use crate::reply_builder::Members;
use crate::status_handler::StatusHandler;
use crate::{Pipeline, FRAME_OUT_LEN};

mod cookies;
mod decision;

use cookies::UP_FRAME_LEN;
pub use cookies::{CookieCheck, ParentCookie};
pub use decision::Control;

/// The buffer [`Pipeline::control_frame`] writes into: a `packet_out` header and a frame.
pub const CONTROL_OUT_LEN: usize = CPU_HEADER_LEN + FRAME_OUT_LEN;

impl Pipeline {
    /// Check cookies from now on ([`CookieCheck`]), or no more (`None`, the default).
    pub fn set_cookie_check(&mut self, check: Option<CookieCheck>) {
        self.cookies = check;
    }

    /// The run a cookie names (protocol.md §4.2): the job's session, or the next run's.
    fn run_of(&self, index: u16) -> u64 {
        let (session, _, _) = self.run_tracker.report(index);
        CookieFor::run_of(session, self.job_counters.snapshot(index).runs)
    }

    /// Advance the controller's clock, which its cookies' windows follow.
    pub fn set_controller_time(&mut self, now: Instant) {
        if let Some(check) = &mut self.cookies {
            check.now = now;
        }
    }

    /// The controller's decision on `datagram`, a Join, Status or Cookie the pipeline sent
    /// the CPU port from `from` (`None`: a bare datagram, no address to bind a cookie to);
    /// an answer is written into `out`. Counts what it refuses and answers.
    pub fn control(&mut self, datagram: &[u8], from: Option<Source>, out: &mut [u8]) -> Control {
        let Ok((kind, job, rank)) = wire::peek(datagram) else {
            return self.refused(DropReason::Malformed);
        };
        match kind {
            MessageType::Join => {
                let Ok(j) = JoinRepr::parse(&JoinPacket::new_unchecked(datagram)) else {
                    return self.refused(DropReason::Malformed);
                };
                let Some(entry) = self.classifier.job(job) else {
                    return Control::Inject;
                };
                if j.verify(entry.config.key) {
                    let who = CookieFor {
                        job,
                        rank,
                        nonce: j.nonce,
                        run: self.run_of(entry.index),
                    };
                    return match self.cookie_for(from, who, j.cookie) {
                        Some(cookie) => self.cookie(who, cookie, out),
                        None => Control::Inject,
                    };
                }
                self.job_counters.count(JobEvent::Unauthorized, entry.index);
                let len = self
                    .reply_builder
                    .abort(out, job, rank, AbortReason::BadKey, 0, j.nonce);
                self.answered(job, rank, len)
            }
            MessageType::Status => {
                let Ok(q) = StatusRepr::parse(&StatusPacket::new_unchecked(datagram)) else {
                    return self.refused(DropReason::Malformed);
                };
                // Nothing to a stranger (protocol.md §3.7): not even whether the job exists.
                let Some(entry) = self.classifier.job(job) else {
                    return self.refused(DropReason::UnknownJob);
                };
                if !q.verify(entry.config.key) {
                    self.job_counters.count(JobEvent::Unauthorized, entry.index);
                    return self.refused(DropReason::BadSession);
                }
                let who = CookieFor {
                    job,
                    rank,
                    nonce: q.nonce,
                    run: self.run_of(entry.index),
                };
                if let Some(cookie) = self.cookie_for(from, who, q.cookie) {
                    return self.cookie(who, cookie, out);
                }
                let (session, _, joined) = self.run_tracker.report(entry.index);
                let c = entry.config;
                let tier = self.tier_selector.apply(entry.index);
                let counters = StatusHandler::counters(
                    &self.drop_counters.snapshot(),
                    &self.job_counters.snapshot(entry.index),
                );
                let len = self.reply_builder.status_reply(
                    out,
                    job,
                    rank,
                    tier.wire_world(c.world),
                    StatusHandler::flags(joined, c.world, session != 0),
                    c.slot_count,
                    counters,
                    Members::new(joined, tier.rank_lo()),
                );
                self.answered(job, rank, len)
            }
            _ => self.refused(DropReason::UnexpectedType),
        }
    }

    /// Sign the child's Join up in `up` (its whole datagram) with the parent job's key, as
    /// the controller does before sending it out of the parent's port (protocol.md §7),
    /// with the parent's cookie if `with_cookie` (frames; on bare datagrams the core's
    /// endpoint puts it in and signs again, as for the reference); return the child's job
    /// table entry, or `None` if no child job of this switch sends it.
    pub fn sign_up(&self, up: &mut [u8], with_cookie: bool) -> Option<u16> {
        let mut j = JoinRepr::parse(&JoinPacket::new_unchecked(&*up)).ok()?;
        let (index, key) = self.classifier.jobs().find_map(|e| {
            let tier = self.tier_selector.apply(e.index);
            tier.link()
                .filter(|l| l.job == j.job && l.member == j.rank)
                .map(|l| (e.index, l.key))
        })?;
        if with_cookie {
            j.cookie = self.parent_cookies.get(usize::from(index))?.cookie;
        }
        j.sign(key).emit(&mut JoinPacket::new_unchecked(
            up.get_mut(..wire::join::LEN)?,
        ));
        Some(index)
    }

    /// A parent's Cookie in `datagram`, if it answers the last Join up of a child job here:
    /// keep it, and write that Join with it, signed again, into `out`; return the length
    /// and the parent's port.
    fn parent_cookie(&mut self, datagram: &[u8], out: &mut [u8]) -> Option<(usize, u16)> {
        let c = CookieRepr::parse(&CookiePacket::new_unchecked(datagram)).ok()?;
        let index = self.classifier.jobs().find_map(|e| {
            let tier = self.tier_selector.apply(e.index);
            tier.link()
                .filter(|l| l.job == c.job && l.member == c.rank)
                .map(|_| e.index)
        })?;
        let (last, port) = self.parent_cookies.get(usize::from(index))?.last?;
        let up = JoinRepr::parse(&JoinPacket::new_unchecked(&last[TRANSPORT_LEN..])).ok()?;
        if up.nonce != c.nonce {
            return None;
        }
        self.parent_cookies.get_mut(usize::from(index))?.cookie = c.cookie;
        let frame = out.get_mut(..UP_FRAME_LEN)?;
        frame.copy_from_slice(&last);
        self.sign_up(&mut frame[TRANSPORT_LEN..], true)?;
        Some((UP_FRAME_LEN, port))
    }

    /// The controller's step on a frame the pipeline sent the CPU port (`packet_in`, then
    /// the frame): write into `out` the frame it sends back on the CPU port (`packet_out`,
    /// then a frame) and return its length, or the drop it decided (`Malformed` for what
    /// is no frame the pipeline sends). `out` must hold [`CONTROL_OUT_LEN`] bytes
    /// (`OutputTooSmall`).
    pub fn control_frame(&mut self, punted: &[u8], out: &mut [u8]) -> Result<usize, DropReason> {
        let out = out
            .get_mut(..CONTROL_OUT_LEN)
            .ok_or(DropReason::OutputTooSmall)?;
        let header = punted.get(..CPU_HEADER_LEN).ok_or(DropReason::Malformed)?;
        let packet_in = PacketIn::from_bytes([header[0], header[1]]);
        let frame = &punted[CPU_HEADER_LEN..];
        let (head, body) = out.split_at_mut(CPU_HEADER_LEN);
        let mut packet_out = PacketOut {
            port: packet_in.port,
            forward: true,
        };
        if packet_in.up {
            // A child's Join up, already addressed to the parent (whose UDP port need not
            // be the switchml port): signed, then out of the parent's port as it is; kept,
            // to send again when the parent's Cookie comes.
            let copy = body.get_mut(..UP_FRAME_LEN).ok_or(DropReason::Malformed)?;
            copy.copy_from_slice(frame.get(..UP_FRAME_LEN).ok_or(DropReason::Malformed)?);
            let index = self
                .sign_up(&mut copy[TRANSPORT_LEN..], true)
                .ok_or(DropReason::Malformed)?;
            let mut last = [0u8; UP_FRAME_LEN];
            last.copy_from_slice(copy);
            if let Some(kept) = self.parent_cookies.get_mut(usize::from(index)) {
                kept.last = Some((last, packet_in.port));
            }
            self.drop_counters.tally(Tally::Up);
            head.copy_from_slice(&packet_out.to_bytes());
            return Ok(CPU_HEADER_LEN + UP_FRAME_LEN);
        }
        let h = Parser::parse_frame(frame).map_err(|_| DropReason::Malformed)?;
        let transport = h.transport.ok_or(DropReason::Malformed)?;
        let datagram = h.datagram;
        let end = TRANSPORT_LEN + datagram.len();
        if let Some((len, port)) = self.parent_cookie(datagram, body) {
            // The last Join up again, with the parent's cookie, out of the parent's port.
            self.drop_counters.tally(Tally::Up);
            packet_out.port = port;
            head.copy_from_slice(&packet_out.to_bytes());
            return Ok(CPU_HEADER_LEN + len);
        }
        let len = {
            let (frame_head, answer) = body.split_at_mut(TRANSPORT_LEN);
            let from = Source {
                ip: transport.ipv4.src,
                udp_port: transport.udp.src_port,
            };
            match self.control(datagram, Some(from), answer) {
                Control::Drop(reason) => return Err(reason),
                Control::Inject => {
                    body[..end].copy_from_slice(&frame[..end]);
                    packet_out.forward = false;
                    end
                }
                Control::Answer { len, .. } => {
                    self.udp_sender.reflect(&transport, len, frame_head);
                    TRANSPORT_LEN + len
                }
            }
        };
        head.copy_from_slice(&packet_out.to_bytes());
        Ok(CPU_HEADER_LEN + len)
    }

    /// The cookie to send `who` at `from` if `cookie` is not valid for it, when the
    /// controller checks cookies and knows the address; `None` if it lets the message in.
    fn cookie_for(&self, from: Option<Source>, who: CookieFor, cookie: u64) -> Option<u64> {
        let (check, from) = (self.cookies.as_ref()?, from?);
        if check.jar.check(check.now, &from, who, cookie) {
            return None;
        }
        Some(check.jar.issue(check.now, &from, who))
    }

    /// Answer `who` with `cookie` (protocol.md §3.10).
    fn cookie(&mut self, who: CookieFor, cookie: u64, out: &mut [u8]) -> Control {
        let repr = CookieRepr {
            job: who.job,
            rank: who.rank,
            nonce: who.nonce,
            cookie,
        };
        let len = wire::cookie::LEN;
        let Some(out) = out.get_mut(..len) else {
            return self.refused(DropReason::OutputTooSmall);
        };
        repr.emit(&mut CookiePacket::new_unchecked(out));
        self.answered(who.job, who.rank, len)
    }

    /// Count an answer of the controller's as the switch's unicast answer, as the reference
    /// counts it: the pipeline sends it on uncounted.
    fn answered(&mut self, job: u16, rank: u16, len: usize) -> Control {
        self.drop_counters.tally(Tally::Unicast);
        Control::Answer { job, rank, len }
    }

    /// Count a drop the controller decides, as the switch's (protocol.md §3.8): the
    /// datagram was counted received when the pipeline sent it here.
    fn refused(&mut self, reason: DropReason) -> Control {
        self.drop_counters.tally(Tally::Drop(reason));
        Control::Drop(reason)
    }
}
