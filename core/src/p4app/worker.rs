//! The dialect's worker: what the original client does, sans-IO in the style of quinn-proto
//! (protocol.md §8.3).
//!
//! Call order: [`submit`](P4appWorker::submit) a tensor, then loop: send every datagram
//! [`poll_transmit`](P4appWorker::poll_transmit) gives (to the switch's UDP port 48864),
//! wait for a datagram or [`poll_timeout`](P4appWorker::poll_timeout), feed it to
//! [`handle_packet`](P4appWorker::handle_packet) or
//! [`handle_timeout`](P4appWorker::handle_timeout), and drain
//! [`poll_event`](P4appWorker::poll_event). `now` never goes backwards.
//!
//! One job at a time per worker (one client thread). The worker keeps what spans jobs — the
//! job number and the `shift` that makes every slot alternate sets — so a long-lived worker
//! serves a run of jobs; [`P4appWorker::resume`] starts one from another's state when the
//! tensors cannot share a lifetime.

use super::packet::{P4appPacket, P4appRepr, P4appSize, MAX_SLOT, MSG_TYPE};
use super::quant::{block_exponent, P4appScale, MIN_EXPONENT};
use crate::time::{Duration, Instant};

/// A tensor the dialect can reduce: int32 as is, float32 through the pipelined exponents.
#[derive(Debug)]
pub enum P4appTensor<'t> {
    /// Summed exactly (wrapping, as the switch adds).
    I32(&'t mut [i32]),
    /// Scaled by `INT32_MAX / (workers · 2^emax)` per block.
    F32(&'t mut [f32]),
}

/// What the worker needs to know, fixed for its life. Made by [`P4appConfig::new`] and
/// adjusted field by field (non-exhaustive, so that knobs can be added).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct P4appConfig {
    /// The number of workers of the session (it scales floats).
    pub workers: u16,
    /// This worker's thread index `t`: it owns slots `[2M·t, 2M·t + M)`.
    pub thread: u16,
    /// Values per packet.
    pub size: P4appSize,
    /// The resend timeout of a packet (the original's default is 10 ms).
    pub timeout: Duration,
    /// After this many timeouts (of any packet) the timeout doubles and the count starts
    /// again. The original makes it a client option; 10 here.
    pub timeout_threshold: u32,
    /// The timeout never doubles past this.
    pub max_timeout: Duration,
}

impl P4appConfig {
    /// The original client's defaults for `workers` and 64 values per packet.
    pub const fn new(workers: u16) -> P4appConfig {
        P4appConfig {
            workers,
            thread: 0,
            size: P4appSize::Elements64,
            timeout: Duration::from_millis(10),
            timeout_threshold: 10,
            max_timeout: Duration::from_secs(1),
        }
    }
}

/// What the worker tells its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum P4appEvent {
    /// Job `job` is done: its tensor holds the sum.
    Done {
        /// The job id (its low byte is the job number on the wire).
        job: u32,
    },
}

/// Why [`P4appWorker::submit`] refused a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum P4appSubmitError {
    /// A job is still running.
    Busy,
    /// A float that is NaN, infinite or of magnitude 2¹²⁷ or more, in this block.
    Unscalable {
        /// The block (`packet size` values) holding it.
        block: usize,
    },
    /// The job needs more packets than the 32-bit `tsi` numbers.
    TooLong,
}

/// Why [`P4appWorker::new`] refused a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum P4appConfigError {
    /// `M` is 0 or the thread's slots pass the pool index's 14 bits.
    Slots,
    /// No workers.
    Workers,
}

/// One (slot, set) of this thread: the packet that last used it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Use {
    /// The packet index (`tsi`) within the current job; meaningful when `sent`.
    tsi: u32,
    sent: bool,
    received: bool,
    /// When to resend, while sent and not received.
    deadline: Option<Instant>,
    /// The resend is owed.
    resend: bool,
    /// The max exponent the reply carried (floats): block `tsi`'s scale.
    emax: i8,
}

impl Use {
    const IDLE: Use = Use {
        tsi: 0,
        sent: false,
        received: false,
        deadline: None,
        resend: false,
        emax: MIN_EXPONENT,
    };
}

/// The job in progress.
#[derive(Debug)]
struct Job<'t> {
    id: u32,
    tensor: P4appTensor<'t>,
    /// Blocks of `size` values (the last may be short).
    blocks: u32,
    /// Packets in flight at most: `min(M, blocks)`.
    window: u32,
    /// Packets of the job: `blocks`, plus `window` for floats.
    packets: u32,
    next: u32,
    received: u32,
}

/// The dialect's worker with `M` packets outstanding (see the module doc).
#[derive(Debug)]
pub struct P4appWorker<'t, const M: usize> {
    config: P4appConfig,
    /// `shift` of the original: where in the 2M (slot, set) cycle the next job starts.
    shift: u32,
    next_job: u32,
    job: Option<Job<'t>>,
    /// Per (set, slot − 2M·t).
    uses: [[Use; M]; 2],
    timeout: Duration,
    timeouts: u32,
    event: Option<P4appEvent>,
}

impl<'t, const M: usize> P4appWorker<'t, M> {
    /// Make a worker that starts at job 0, slot use 0.
    pub fn new(config: P4appConfig) -> Result<Self, P4appConfigError> {
        Self::resume(config, 0, 0)
    }

    /// Make a worker that goes on from another's [`next_job`](Self::next_job) and
    /// [`shift`](Self::shift).
    pub fn resume(
        config: P4appConfig,
        next_job: u32,
        shift: u32,
    ) -> Result<Self, P4appConfigError> {
        let last = (2 * M)
            .checked_mul(usize::from(config.thread))
            .and_then(|b| b.checked_add(M));
        if M == 0 || last.is_none_or(|l| l > usize::from(MAX_SLOT) + 1) {
            return Err(P4appConfigError::Slots);
        }
        if config.workers == 0 {
            return Err(P4appConfigError::Workers);
        }
        Ok(P4appWorker {
            config,
            shift: shift % (2 * M as u32),
            next_job,
            job: None,
            uses: [[Use::IDLE; M]; 2],
            timeout: config.timeout,
            timeouts: 0,
            event: None,
        })
    }

    /// Return the id the next submitted job gets.
    pub fn next_job(&self) -> u32 {
        self.next_job
    }

    /// Return where in the cycle of 2M (slot, set) pairs the next job starts.
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// Return whether a job is running.
    pub fn is_busy(&self) -> bool {
        self.job.is_some()
    }

    /// Start an all-reduce of `tensor`; its sum replaces it when [`P4appEvent::Done`] comes.
    pub fn submit(&mut self, tensor: P4appTensor<'t>) -> Result<u32, P4appSubmitError> {
        if self.job.is_some() {
            return Err(P4appSubmitError::Busy);
        }
        let n = self.config.size.elements();
        let (len, float) = match &tensor {
            P4appTensor::I32(t) => (t.len(), false),
            P4appTensor::F32(t) => {
                if let Some(block) = t.chunks(n).position(|b| block_exponent(b).is_none()) {
                    return Err(P4appSubmitError::Unscalable { block });
                }
                (t.len(), true)
            }
        };
        let blocks = u32::try_from(len.div_ceil(n)).map_err(|_| P4appSubmitError::TooLong)?;
        let window = blocks.min(M as u32);
        let packets = if float {
            blocks
                .checked_add(window)
                .ok_or(P4appSubmitError::TooLong)?
        } else {
            blocks
        };
        let id = self.next_job;
        self.next_job = self.next_job.wrapping_add(1);
        self.uses = [[Use::IDLE; M]; 2];
        self.job = Some(Job {
            id,
            tensor,
            blocks,
            window,
            packets,
            next: 0,
            received: 0,
        });
        self.finish_if_done();
        Ok(id)
    }

    /// Return the next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<P4appEvent> {
        self.event.take()
    }

    /// Return when [`handle_timeout`](Self::handle_timeout) is next due.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.uses.iter().flatten().filter_map(|u| u.deadline).min()
    }

    /// Owe a resend of every packet whose timer is due; double the timeout after
    /// `timeout_threshold` of them.
    pub fn handle_timeout(&mut self, now: Instant) {
        for u in self.uses.iter_mut().flatten() {
            if u.deadline.is_some_and(|d| d <= now) {
                u.deadline = None;
                u.resend = true;
                self.timeouts += 1;
                if self.timeouts >= self.config.timeout_threshold {
                    self.timeouts = 0;
                    self.timeout = self.timeout.doubled_up_to(self.config.max_timeout);
                }
            }
        }
    }

    /// The (set, slot offset) of packet `k`: `i = (k + shift) mod 2M`, slot offset
    /// `i mod M`, set `i ≥ M`.
    fn position(&self, k: u32) -> (usize, usize) {
        let i = ((u64::from(k) + u64::from(self.shift)) % (2 * M as u64)) as usize;
        (usize::from(i >= M), i % M)
    }

    /// Write the next datagram (the UDP payload) into `buf` and return its length; `None`
    /// when nothing is due or `buf` is shorter than a packet.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let job = self.job.as_ref()?;
        let len = super::packet::HEADER_LEN + 4 * self.config.size.elements();
        if buf.len() < len {
            return None;
        }
        // Resends first, then the next new packet if its window and its slot are free.
        let owed = (0..2 * M).find(|&j| self.uses[j / M][j % M].resend);
        let (k, first_batch) = match owed {
            Some(j) => (self.uses[j / M][j % M].tsi, false),
            None => {
                let k = job.next;
                if k >= job.packets || !self.may_send(k) {
                    return None;
                }
                (k, k < job.window)
            }
        };
        self.build(k, &mut buf[..len]);
        let wait = if first_batch {
            // The first batch has no reply to pace it; the original gives it M timeouts.
            Duration::from_micros(self.timeout.total_micros().saturating_mul(M as u64))
        } else {
            self.timeout
        };
        let (set, slot) = self.position(k);
        let u = &mut self.uses[set][slot];
        if owed.is_none() {
            *u = Use {
                tsi: k,
                sent: true,
                ..Use::IDLE
            };
            if let Some(job) = self.job.as_mut() {
                job.next += 1;
            }
        }
        u.resend = false;
        u.deadline = Some(now + wait);
        Some(len)
    }

    /// Return whether new packet `k` may go: the reply of `k − window` came (at most
    /// `window` in flight) and so did that of `k − M`, the slot's previous use.
    fn may_send(&self, k: u32) -> bool {
        let Some(job) = self.job.as_ref() else {
            return false;
        };
        let done = |j: u32| {
            let (set, slot) = self.position(j);
            let u = &self.uses[set][slot];
            u.sent && u.tsi == j && u.received
        };
        let window_ok = k < job.window || done(k - job.window);
        let slot_ok = k < M as u32 || done(k - M as u32);
        window_ok && slot_ok
    }

    /// Write packet `k` of the job.
    fn build(&self, k: u32, out: &mut [u8]) {
        let Some(job) = self.job.as_ref() else {
            return;
        };
        let n = self.config.size.elements();
        let (set, slot) = self.position(k);
        let base = 2 * M * usize::from(self.config.thread);
        let block = |b: u32| {
            let start = (b as usize).saturating_mul(n);
            start..start.saturating_add(n)
        };
        let mut e0 = 0;
        let mut p = P4appPacket::new_unchecked(&mut *out);
        let values = p.values_mut();
        values.iter_mut().for_each(|v| v.set(0));
        match &job.tensor {
            P4appTensor::I32(t) => {
                let r = block(k);
                let src = t.get(r.start..r.end.min(t.len())).unwrap_or(&[]);
                for (v, x) in values.iter_mut().zip(src) {
                    v.set(*x);
                }
            }
            P4appTensor::F32(t) => {
                let slice = |b: u32| {
                    let r = block(b);
                    t.get(r.start..r.end.min(t.len())).unwrap_or(&[])
                };
                // Packet k carries block k's exponent and block (k − window)'s data.
                e0 = if k < job.blocks {
                    block_exponent(slice(k)).unwrap_or(MIN_EXPONENT)
                } else {
                    MIN_EXPONENT
                };
                if let Some(d) = k.checked_sub(job.window) {
                    let (dset, dslot) = self.position(d);
                    let scale = P4appScale::new(self.config.workers, self.uses[dset][dslot].emax);
                    for (v, x) in values.iter_mut().zip(slice(d)) {
                        v.set(scale.quantize_value(*x));
                    }
                }
            }
        }
        P4appRepr {
            msg_type: MSG_TYPE,
            unused_bit: false,
            size: self.config.size,
            job: job.id as u8,
            tsi: k,
            set: set == 1,
            slot: (base + slot) as u16,
            e0,
            e1: 0,
        }
        .emit(&mut p);
    }

    /// Take a datagram from the switch (the UDP payload). Anything that is not the first
    /// reply to a packet in flight of this job — by job number and `tsi` — is ignored, as the
    /// original client ignores it.
    pub fn handle_packet(&mut self, _now: Instant, bytes: &[u8]) {
        let p = P4appPacket::new_unchecked(bytes);
        let Ok(repr) = P4appRepr::parse(&p) else {
            return;
        };
        let Some(job) = self.job.as_ref() else {
            return;
        };
        let k = repr.tsi;
        if repr.job != job.id as u8 || k >= job.packets || repr.size != self.config.size {
            return;
        }
        let (set, slot) = self.position(k);
        let u = self.uses[set][slot];
        if !u.sent || u.tsi != k || u.received {
            return;
        }
        let n = self.config.size.elements();
        let (blocks, window, workers) = (job.blocks, job.window, self.config.workers);
        // The scale block k − window was sent with, read before this use is overwritten.
        let data_emax = k.checked_sub(window).map(|d| {
            let (dset, dslot) = self.position(d);
            self.uses[dset][dslot].emax
        });
        let Some(job) = self.job.as_mut() else {
            return;
        };
        let values = p.values();
        match &mut job.tensor {
            P4appTensor::I32(t) => {
                let start = (k as usize).saturating_mul(n);
                for (x, v) in t.iter_mut().skip(start).take(n).zip(values) {
                    *x = v.get();
                }
            }
            P4appTensor::F32(t) => {
                if let Some((d, emax)) = k.checked_sub(window).zip(data_emax) {
                    let scale = P4appScale::new(workers, emax);
                    let start = (d as usize).saturating_mul(n);
                    for (x, v) in t.iter_mut().skip(start).take(n).zip(values) {
                        *x = scale.dequantize_value(v.get());
                    }
                }
            }
        }
        job.received += 1;
        let u = &mut self.uses[set][slot];
        u.received = true;
        u.deadline = None;
        u.resend = false;
        if k < blocks {
            u.emax = repr.e0;
        }
        self.finish_if_done();
    }

    fn finish_if_done(&mut self) {
        let Some(job) = self.job.as_ref() else {
            return;
        };
        if job.received < job.packets {
            return;
        }
        // The next job starts where this one's uses end, so every slot alternates sets.
        self.shift = ((u64::from(self.shift) + u64::from(job.packets)) % (2 * M as u64)) as u32;
        self.event = Some(P4appEvent::Done { job: job.id });
        self.job = None;
        self.uses = [[Use::IDLE; M]; 2];
    }
}

#[cfg(test)]
#[path = "worker_tests.rs"]
mod tests;
