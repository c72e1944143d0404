//! The per-slot loop: which use each slot is on, sending it, accepting its result, and
//! moving to the next chunk (protocol.md §5.3, §6); recovering a lost use with a Probe
//! first, so that only the rank that needs to resend does (§6.1).

use super::slot_state::{Work, NOT_SENT};
use super::{NonFinitePolicy, Phase, Probe, StallReport, Worker, WorkerError};
use crate::quant::{NonFiniteKinds, Tensor, NO_EXPONENT};
use crate::time::Instant;
use crate::wire::{DataKind, DataPacket, DataRepr, Flags};

impl<B: Tensor, const SLOTS: usize, const QUEUE: usize> Worker<B, SLOTS, QUEUE> {
    /// Put slot `i` on the first chunk it owns in tensors `from..`, or make it idle.
    pub(super) fn start_next(&mut self, i: usize, from: u64) {
        let window = self.config.window;
        let mut work = Work::Idle {
            next: self.tensors.next_id,
        };
        for id in from..self.tensors.next_id {
            let Some(e) = self.tensors.get(id) else {
                continue;
            };
            if let Some(chunk) = e.first_chunk(i as u16, window) {
                work = if e.is_float() {
                    Work::Prime { tensor: id, chunk }
                } else {
                    Work::Data {
                        tensor: id,
                        chunk,
                        exp: NO_EXPONENT,
                    }
                };
                break;
            }
        }
        self.set_work(i, work);
        if work
            != (Work::Idle {
                next: self.tensors.next_id,
            })
        {
            self.enqueue(i);
        }
    }

    fn enqueue(&mut self, i: usize) {
        let st = &mut self.slots[i];
        if !st.queued && self.send_queue.push_back(i as u16).is_ok() {
            st.queued = true;
        }
    }

    /// Handle every slot whose timer expired: probe the switch for the use, or resend it
    /// if the last probe went unanswered, or start the stall probe once `retries` timeouts
    /// made no progress.
    pub(super) fn expire_slots(&mut self, now: Instant) {
        let mut stalled = heapless::Vec::<u16, SLOTS>::new();
        let mut unanswered = 0u16;
        let mut newly_late = 0u16;
        let (slots, queue, cfg) = (&mut self.slots, &mut self.send_queue, &self.config);
        self.slot_timers.expire(now, |i| {
            let st = &mut slots[i];
            if matches!(st.work, Work::Idle { .. }) {
                return;
            }
            if st.tries >= cfg.retries {
                let _ = stalled.push(i as u16);
                return;
            }
            st.tries += 1;
            if !st.late && st.order != NOT_SENT {
                newly_late += 1;
            }
            st.late = true;
            st.rto = st.rto.doubled_up_to(cfg.max_rto);
            if st.checking && !st.probe_due {
                // Neither the switch's answer nor the result came within a timeout: the
                // path is congested or lossy, or the switch answers no Probe. Resend.
                st.resends += 1;
                st.checking = false;
                st.backed_off = true;
                unanswered += 1;
            } else {
                st.checking = true;
                st.probe_due = true;
            }
            if !st.queued && queue.push_back(i as u16).is_ok() {
                st.queued = true;
            }
        });
        for slot in stalled {
            match self.probe {
                None => {
                    let seq = self.slots[usize::from(slot)].seq;
                    crate::trace::warning!(
                        "job {} rank {}: slot {} made no progress at use {}; probing the switch",
                        cfg.job,
                        cfg.rank,
                        cfg.slot_lo + slot,
                        seq
                    );
                    self.probe = Some(Probe {
                        slot,
                        seq,
                        sent: 0,
                        due: true,
                    });
                }
                // One probe at a time; look at this slot again later, in case the probe's
                // slot recovers and this one is still stuck.
                Some(p) if p.slot != slot => {
                    self.slot_timers.arm(usize::from(slot), now + cfg.max_rto)
                }
                Some(_) => {}
            }
        }
        for _ in 0..unanswered {
            // Which way it was lost is unknown: not a reason to mark (§6.3).
            self.note_loss(now, false);
        }
        // A late use is being recovered: it holds no room in the window, as a lost segment
        // holds none in TCP's pipe (RFC 6675), so a loss does not stall the lane.
        self.in_flight = self.in_flight.saturating_sub(newly_late);
    }

    /// Send the next queued use, or the next queued recovery Probe, if any.
    pub(super) fn emit_next_contribution(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        while let Some(i) = self.send_queue.pop_front() {
            let i = usize::from(i);
            self.slots[i].queued = false;
            if self.slots[i].probe_due {
                if let Some(len) = self.emit_recovery_probe(i, buf) {
                    let st = &mut self.slots[i];
                    st.probe_due = false;
                    st.watch = self.next_order.saturating_sub(1);
                    self.slot_timers.arm(i, now + st.rto);
                    self.stats.probes += 1;
                    return Some(len);
                }
                continue;
            }
            let fresh = self.slots[i].resends == 0 && self.slots[i].order == NOT_SENT;
            if fresh && self.cwnd.is_on() {
                // Fresh uses go out oldest first, below (§6.3); resends and Probes never
                // wait.
                self.hold(i);
                continue;
            }
            if let Some(len) = self.send_use(now, i, fresh, buf) {
                return Some(len);
            }
            if self.phase == Phase::Failed {
                return None;
            }
        }
        let i = self.oldest_held()?;
        if !self.window_admits(i) {
            return None;
        }
        self.unhold(i);
        self.send_use(now, i, true, buf)
    }

    /// Send slot `i`'s current use (`fresh`: its first send) and arm its timer.
    fn send_use(&mut self, now: Instant, i: usize, fresh: bool, buf: &mut [u8]) -> Option<usize> {
        let len = self.emit_contribution(now, i, buf)?;
        let st = &mut self.slots[i];
        if st.resends == 0 {
            st.sent_at = now;
            st.order = self.next_order;
            self.next_order += 1;
        }
        if fresh {
            self.in_flight += 1;
        }
        st.watch = self.next_order - 1;
        self.slot_timers.arm(i, now + st.rto);
        self.stats.sent += 1;
        if st.resends > 0 {
            self.stats.retransmissions += 1;
        }
        Some(len)
    }

    /// Write slot `i`'s current use into `buf`.
    fn emit_contribution(&mut self, now: Instant, i: usize, buf: &mut [u8]) -> Option<usize> {
        let cfg = self.config;
        let st = self.slots[i];
        let (tensor, chunk, exp_max, prime) = match st.work {
            Work::Idle { .. } => return None,
            Work::Prime { tensor, chunk } => (tensor, chunk, NO_EXPONENT, true),
            Work::Data { tensor, chunk, exp } => (tensor, chunk, exp, false),
        };
        let e = self.tensors.get_mut(tensor)?;
        let range = e.chunk_range(chunk, cfg.count);
        let look_ahead = chunk.saturating_add(u32::from(cfg.window));
        let (count, exp) = if prime {
            (0, e.chunk_exponent(chunk, cfg.count))
        } else if e.is_float() && look_ahead < e.chunks {
            (range.len() as u16, e.chunk_exponent(look_ahead, cfg.count))
        } else {
            (range.len() as u16, NO_EXPONENT)
        };
        let elements = e.buf.elements();
        let repr = DataRepr {
            kind: DataKind::Contribution,
            job: cfg.job,
            rank: cfg.rank,
            slot: cfg.slot_lo + i as u16,
            ver: (st.seq & 1) as u8,
            flags: [
                (st.resends > 0, Flags::RETRANSMIT),
                (self.cwnd.marks(now), Flags::CONGESTED),
            ]
            .into_iter()
            .filter(|&(set, _)| set)
            .fold(Flags::default(), |f, (_, bit)| f.with(bit)),
            count,
            seq: st.seq,
            exp,
            session: self.session,
        };
        let len = repr.buffer_len();
        let Some(out) = buf.get_mut(..len) else {
            self.fail(WorkerError::BufferTooSmall { need: len });
            return None;
        };
        let mut packet = DataPacket::new_unchecked(out);
        repr.emit(&mut packet);
        if !prime {
            if e.finite {
                elements.encode_finite(range, cfg.world, exp_max, packet.values_mut());
            } else {
                let kinds = elements.encode(range, cfg.world, exp_max, packet.values_mut());
                packet.set_flags(repr.flags.with(non_finite_flags(kinds)));
            }
        }
        Some(len)
    }

    /// Accept a Result if it answers a slot's outstanding use; then move the slot on.
    pub(super) fn on_result(&mut self, now: Instant, r: &DataRepr, payload: &[u8]) {
        let cfg = self.config;
        let i = usize::from(r.slot.wrapping_sub(cfg.slot_lo));
        if self.phase != Phase::Running || i >= usize::from(cfg.window) {
            self.stats.ignored += 1;
            return;
        }
        let st = self.slots[i];
        if matches!(st.work, Work::Idle { .. }) || r.seq != st.seq || u32::from(r.ver) != st.seq & 1
        {
            self.stats.stale_results += 1;
            return;
        }
        let next = match st.work {
            Work::Idle { .. } => return,
            Work::Prime { tensor, chunk } => {
                if r.count != 0 {
                    self.stats.ignored += 1;
                    return;
                }
                Some(Work::Data {
                    tensor,
                    chunk,
                    exp: r.exp,
                })
            }
            Work::Data { tensor, chunk, exp } => {
                let Some(e) = self.tensors.get_mut(tensor) else {
                    self.stats.ignored += 1;
                    return;
                };
                let range = e.chunk_range(chunk, cfg.count);
                if usize::from(r.count) != range.len() {
                    self.stats.ignored += 1;
                    return;
                }
                let (world, op, start) = (cfg.world, e.op, range.start);
                let flagged = r.flags.contains(Flags::OVERFLOW).then_some(start);
                let (kinds, float) = (non_finite_kinds(r.flags), e.is_float());
                let mut elements = e.buf.elements();
                // A float chunk some rank flagged non-finite is that value throughout
                // (§5.4), at every rank alike; an int32 tensor has none to write.
                let beyond_range = if float && !kinds.is_empty() {
                    elements.fill_non_finite(range, kinds);
                    None
                } else {
                    elements.decode(range, world, exp, op, payload)
                };
                // A float sum beyond the range is ±∞ there, as IEEE addition makes it; an
                // error only where non-finite values are (§5.2, §5.4).
                let beyond_range =
                    beyond_range.filter(|_| cfg.non_finite == NonFinitePolicy::Refuse);
                e.overflow = [e.overflow, flagged, beyond_range]
                    .into_iter()
                    .flatten()
                    .min();
                e.remaining -= 1;
                let following = chunk.saturating_add(u32::from(cfg.window));
                if following < e.chunks {
                    Some(Work::Data {
                        tensor,
                        chunk: following,
                        exp: r.exp,
                    })
                } else {
                    None
                }
            }
        };
        self.stats.results += 1;
        // Karn's rule: a resent use's result may answer any of its copies; a fetched one
        // answers the Probe that asked for it.
        let sample = (st.resends == 0 && !st.fetch).then(|| now - st.sent_at);
        if let Some(rtt) = sample {
            self.rtt.sample(rtt);
        }
        if st.order != NOT_SENT && !st.late {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        let decrease = self.cwnd.on_result(
            now,
            sample.filter(|_| !st.late),
            self.rtt.srtt(),
            r.flags.contains(Flags::CONGESTED),
        );
        self.count_decrease(decrease);
        self.slot_timers.cancel(i);
        if self.probe.is_some_and(|p| usize::from(p.slot) == i) {
            // The stalled use completed after all: no failure to report.
            self.probe = None;
            self.timers.stop(super::Timer::Probe);
        }
        // Karn: a use resent because the switch did not answer gave no sample, so its
        // backed-off timeout carries over to the slot's next use; otherwise a timeout below
        // the real round trip would resend every use and never measure one. A loss the
        // switch's answer explained says nothing about the round trip: start afresh.
        let measured = self.rtt.rto(cfg.rto, cfg.max_rto);
        let rto = if st.backed_off {
            measured.max(st.rto)
        } else {
            measured
        };
        self.slots[i].order = NOT_SENT;
        self.find_gaps(st.order);
        let st = &mut self.slots[i];
        st.seq = st.seq.wrapping_add(1);
        st.tries = 0;
        st.resends = 0;
        st.rto = rto;
        st.backed_off = false;
        st.checking = false;
        st.probe_due = false;
        st.fetch = false;
        st.late = false;
        match next {
            Some(work) => {
                self.set_work(i, work);
                self.enqueue(i);
            }
            None => {
                let tensor = match st.work {
                    Work::Data { tensor, .. } | Work::Prime { tensor, .. } => tensor,
                    Work::Idle { next } => next,
                };
                self.start_next(i, tensor + 1);
            }
        }
    }

    /// The probe for a stalled slot was answered: fail with what the switch knows.
    pub(super) fn stall_report(&self, report: StallReport) -> Option<WorkerError> {
        let p = self.probe?;
        Some(WorkerError::Stalled {
            slot: self.config.slot_lo + p.slot,
            seq: p.seq,
            report,
        })
    }
}

/// The Contribution flags for a chunk holding `kinds` of non-finite values (§5.4).
fn non_finite_flags(kinds: NonFiniteKinds) -> Flags {
    [
        (kinds.pos_inf, Flags::POS_INF),
        (kinds.neg_inf, Flags::NEG_INF),
        (kinds.nan, Flags::NAN),
    ]
    .into_iter()
    .filter(|&(set, _)| set)
    .fold(Flags::default(), |f, (_, bit)| f.with(bit))
}

/// The non-finite kinds a Result's flags carry (§5.4).
fn non_finite_kinds(flags: Flags) -> NonFiniteKinds {
    NonFiniteKinds {
        pos_inf: flags.contains(Flags::POS_INF),
        neg_inf: flags.contains(Flags::NEG_INF),
        nan: flags.contains(Flags::NAN),
    }
}
