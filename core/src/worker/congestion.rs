//! The congestion window of a lane (protocol.md §6.3): how many of its slots may have a
//! first send outstanding at once.
//!
//! SwitchML keeps every slot of a lane in flight, which is right on a network the job has
//! to itself. On a shared one the lane backs off on three signals, after ATP (NSDI'21) and
//! Swift (SIGCOMM'20):
//!
//! - a `CONGESTED` mark in a Result (a switch with deep queues marks, and a mark on any
//!   rank's Contribution reaches every rank): halve the window, at most once a round trip;
//! - queueing delay: the smallest round trip of the last round trip's Results against the
//!   target (the smallest ever seen plus a headroom). The smallest of a round trip, not
//!   each sample, because a use that waited for another rank's lost Contribution has one
//!   long sample while the queue is empty: a standing queue raises every sample of a round
//!   trip; a loss raises a few. By default (`β` = 0) the delay only classifies losses: a
//!   decrease on delay alone (Swift's, `β` > 0) starves the job against a loss-based TCP
//!   flow, which keeps the queue full whatever the job does;
//! - losses, only when they look like congestion: after a round trip whose delay was
//!   above the target (a standing queue), or clustered (at least `max(4, window / 2)` in
//!   one round trip, which a tail-drop queue gives and 1% random loss almost never does):
//!   halve, at most once a round trip.
//!
//! The window grows by `increase` slots (2) for every window's worth of unmarked Results
//! (about a round trip: TCP's additive increase, in bytes about a TCP segment's), up to
//! the lane's slots. A rank's lanes share its path, so they back off and grow as one flow:
//! with `L` lanes each grows `increase` for every `L` windows of Results, and each halves
//! when another lane of the rank halved for congestion (`on_lane_backoff`). The state is
//! integers and the caller's clock; nothing here allocates.

use crate::time::{Duration, Instant};

/// Whether a lane adapts how many of its slots it keeps in flight (protocol.md §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CongestionControl {
    /// Every slot of the lane in flight, whatever the network does (SwitchML's behaviour).
    Off,
    /// A window of slots in `[min_window, window]` that backs off on congestion.
    On(CongestionParams),
}

impl CongestionControl {
    /// The controller with its default parameters.
    pub const DEFAULT_ON: CongestionControl = CongestionControl::On(CongestionParams::DEFAULT);
}

/// The text form the settings use (`SWITCHML_CONGESTION`): `on` (the default parameters)
/// or `off`.
impl core::str::FromStr for CongestionControl {
    type Err = &'static str;

    fn from_str(s: &str) -> Result<CongestionControl, &'static str> {
        match s.trim() {
            "on" => Ok(CongestionControl::DEFAULT_ON),
            "off" => Ok(CongestionControl::Off),
            _ => Err("congestion control is \"on\" or \"off\""),
        }
    }
}

/// The controller's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CongestionParams {
    /// The smallest window, in slots (at least 1; a larger value is capped at the lane's).
    pub min_window: u16,
    /// How much queueing delay above the smallest round trip is tolerated (Swift's target
    /// is the base round trip plus this).
    pub headroom: Duration,
    /// Swift's `β`, in thousandths: a delay `d` above a target `t` shrinks the window by
    /// `β·(d − t)/d`.
    pub delay_beta_per_mille: u16,
    /// The largest decrease on delay, in thousandths of the window (a mark or a congestion
    /// loss halves it).
    pub max_decrease_per_mille: u16,
    /// Slots added for every window of unmarked Results (about one round trip) — by the
    /// rank, its `L` lanes each adding them every `L` windows: 2, about the bytes a TCP
    /// flow adds a round trip (one 1,448-byte segment against 1 KiB chunks), so that the
    /// job and a Reno or CUBIC flow converge to halves of a link.
    pub increase: u16,
}

impl CongestionParams {
    /// One slot at least, 10 ms of headroom, `β` = 0 — no decrease on delay alone: that
    /// starved the job against a loss-based TCP flow, which keeps the queue full whatever
    /// the job does (docs/benchmarks.md, "Shared links"); the delay then only says which
    /// losses are congestion — decreases of at most a half, 2 slots a round trip up.
    pub const DEFAULT: CongestionParams = CongestionParams {
        min_window: 1,
        headroom: Duration::from_millis(10),
        delay_beta_per_mille: 0,
        max_decrease_per_mille: 500,
        increase: 2,
    };
}

/// Why the window shrank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decrease {
    Mark,
    Delay,
    Loss,
    /// Another lane of the rank halved for congestion.
    Lane,
}

/// A lane's congestion window and what it has seen this round trip.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CongestionWindow {
    params: Option<CongestionParams>,
    /// The rank's lanes, which share its path (at least 1).
    lanes: u16,
    max: u16,
    min: u16,
    window: u16,
    /// The smallest round trip seen: the delay target's base.
    base_rtt: Option<Duration>,
    /// The round trip being observed: when it started, its smallest sample, its losses.
    epoch_start: Option<Instant>,
    epoch_min: Option<Duration>,
    epoch_losses: u16,
    /// Whether the last whole round trip's smallest sample was above the target by more
    /// than the headroom again: a queue the delay signal is not holding down, which is
    /// when a tail-drop queue overflows.
    delay_high: bool,
    /// The last whole round trip's smallest sample: the round trip now, queues included,
    /// without the long samples of uses that waited for a loss's recovery. It times the
    /// round trips here (the smoothed one until it is known).
    recent_rtt: Option<Duration>,
    last_decrease: Option<Instant>,
    /// Unmarked Results since the window last grew.
    unmarked: u32,
    /// Until when this rank's Contributions carry `CONGESTED`: it lost some of its own to
    /// congestion, which only it can see (protocol.md §6.3).
    mark_until: Option<Instant>,
}

impl CongestionWindow {
    /// A window over `max` slots, open fully, for one of a rank's `lanes` lanes.
    pub(crate) fn new(control: CongestionControl, max: u16, lanes: u16) -> Self {
        let max = max.max(1);
        let (params, min) = match control {
            CongestionControl::Off => (None, max),
            CongestionControl::On(p) => (Some(p), p.min_window.clamp(1, max)),
        };
        CongestionWindow {
            params,
            lanes: lanes.max(1),
            max,
            min,
            window: max,
            base_rtt: None,
            epoch_start: None,
            epoch_min: None,
            epoch_losses: 0,
            delay_high: false,
            recent_rtt: None,
            last_decrease: None,
            unmarked: 0,
            mark_until: None,
        }
    }

    /// Return the window: how many slots may have a first send outstanding.
    pub(crate) fn window(&self) -> u16 {
        self.window
    }

    /// Return whether the controller is on.
    pub(crate) fn is_on(&self) -> bool {
        self.params.is_some()
    }

    /// Return whether this rank's Contributions should carry `CONGESTED` now.
    pub(crate) fn marks(&self, now: Instant) -> bool {
        self.mark_until.is_some_and(|t| now < t)
    }

    /// A Result came: `sample` its round trip (none for a resent or fetched use, Karn's
    /// rule, nor for one found late), `srtt` the lane's smoothed round trip, `marked` its
    /// `CONGESTED` flag.
    pub(crate) fn on_result(
        &mut self,
        now: Instant,
        sample: Option<Duration>,
        srtt: Option<Duration>,
        marked: bool,
    ) -> Option<Decrease> {
        let p = self.params?;
        if let Some(s) = sample {
            self.base_rtt = Some(self.base_rtt.map_or(s, |b| b.min(s)));
            self.epoch_min = Some(self.epoch_min.map_or(s, |m| m.min(s)));
        }
        let srtt = self.recent_rtt.or(srtt)?;
        if marked && self.may_decrease(now, srtt) {
            self.decrease(now, 500);
            return Some(Decrease::Mark);
        }
        if !marked {
            // Additive increase, as TCP's: `increase` slots a window of unmarked Results,
            // about a round trip, also in the round trip after a decrease; shared by the
            // rank's lanes, so that together they grow as one flow.
            self.unmarked = self.unmarked.saturating_add(1);
            if self.unmarked >= u32::from(self.window) * u32::from(self.lanes) {
                self.unmarked = 0;
                self.window = self.window.saturating_add(p.increase).min(self.max);
            }
        }
        let start = *self.epoch_start.get_or_insert(now);
        if now < start + srtt {
            return None;
        }
        // A round trip is over: judge its standing queue.
        let smallest = self.epoch_min.take();
        self.epoch_start = Some(now);
        self.epoch_losses = 0;
        if smallest.is_some() {
            self.recent_rtt = smallest;
        }
        let target = self.base_rtt.map(|b| b + p.headroom);
        self.delay_high = matches!((smallest, target), (Some(m), Some(t)) if m > t);
        match (smallest, target) {
            // β = 0: the delay only says which losses are congestion (the default, §6.3).
            _ if p.delay_beta_per_mille == 0 => None,
            (Some(m), Some(t)) if m > t => {
                if !self.may_decrease(now, srtt) {
                    return None;
                }
                let excess = m.total_micros().saturating_sub(t.total_micros());
                let cut = (u64::from(p.delay_beta_per_mille) * excess / m.total_micros().max(1))
                    .clamp(1, u64::from(p.max_decrease_per_mille.min(1000)));
                self.decrease(now, cut as u16);
                Some(Decrease::Delay)
            }
            (None, _) => None,
            _ => None,
        }
    }

    /// A use was found lost (the switch's answer says so, or no answer came):
    /// `upstream` when this rank's own Contribution never reached the switch. It counts as
    /// congestion only in a round trip of high delay or among clustered losses.
    pub(crate) fn on_loss(
        &mut self,
        now: Instant,
        srtt: Option<Duration>,
        upstream: bool,
    ) -> Option<Decrease> {
        self.params?;
        self.epoch_losses = self.epoch_losses.saturating_add(1);
        let srtt = self.recent_rtt.or(srtt)?;
        let clustered = self.epoch_losses >= (self.window / 2).max(4);
        if !(clustered || self.delay_high) || !self.may_decrease(now, srtt) {
            return None;
        }
        self.decrease(now, 500);
        if upstream {
            self.mark_until = Some(now + srtt);
        }
        Some(Decrease::Loss)
    }

    /// Another lane of this rank halved its window for congestion (a mark or a loss):
    /// the lanes share the rank's path, so this one halves too, at most once a round trip.
    /// A lane never passes on a decrease it took this way, so two lanes cannot echo one.
    pub(crate) fn on_lane_backoff(
        &mut self,
        now: Instant,
        srtt: Option<Duration>,
    ) -> Option<Decrease> {
        self.params?;
        let srtt = self.recent_rtt.or(srtt)?;
        if !self.may_decrease(now, srtt) {
            return None;
        }
        self.decrease(now, 500);
        Some(Decrease::Lane)
    }

    fn may_decrease(&self, now: Instant, srtt: Duration) -> bool {
        self.last_decrease.is_none_or(|t| now >= t + srtt)
    }

    /// Shrink the window by `per_mille` thousandths (at least one slot), not below `min`.
    fn decrease(&mut self, now: Instant, per_mille: u16) {
        let w = u32::from(self.window);
        let kept = w * u32::from(1000 - per_mille.min(1000)) / 1000;
        let kept = kept.min(w.saturating_sub(1));
        self.window = (kept as u16).max(self.min);
        self.last_decrease = Some(now);
        self.epoch_start = Some(now);
        self.epoch_min = None;
        self.epoch_losses = 0;
    }
}
