//! Timers: a small enum-indexed table (after quinn-proto's `connection/timer.rs`) for the
//! worker-wide timers, and one deadline per slot for retransmissions.

use crate::time::Instant;

/// The worker-wide timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Resend the Join.
    JoinResend = 0,
    /// Give up joining.
    JoinDeadline = 1,
    /// Resend the Probe, or give up on it.
    Probe = 2,
    /// The lane has sent nothing for its keep-alive interval: send a Probe (§4.3).
    KeepAlive = 3,
}

impl Timer {
    const COUNT: usize = 4;
}

/// Deadlines of the worker-wide timers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TimerTable {
    data: [Option<Instant>; Timer::COUNT],
}

impl TimerTable {
    pub(crate) fn set(&mut self, timer: Timer, at: Instant) {
        self.data[timer as usize] = Some(at);
    }

    pub(crate) fn stop(&mut self, timer: Timer) {
        self.data[timer as usize] = None;
    }

    pub(crate) fn get(&self, timer: Timer) -> Option<Instant> {
        self.data[timer as usize]
    }

    pub(crate) fn next_timeout(&self) -> Option<Instant> {
        self.data.iter().flatten().min().copied()
    }

    /// Return whether `timer` is set and due at `now`; if so, stop it.
    pub(crate) fn expire(&mut self, timer: Timer, now: Instant) -> bool {
        let due = self.get(timer).is_some_and(|t| t <= now);
        if due {
            self.stop(timer);
        }
        due
    }
}

/// One retransmission deadline per slot, with a cached lower bound so that the hot path
/// (arming and cancelling per packet) is O(1) and only an expiry scans the table.
#[derive(Debug, Clone)]
pub(crate) struct SlotTimers<const SLOTS: usize> {
    deadlines: [Option<Instant>; SLOTS],
    /// No armed deadline is earlier than this (it may be stale after a cancel).
    earliest: Option<Instant>,
}

impl<const SLOTS: usize> SlotTimers<SLOTS> {
    pub(crate) const fn new() -> Self {
        SlotTimers {
            deadlines: [None; SLOTS],
            earliest: None,
        }
    }

    pub(crate) fn arm(&mut self, slot: usize, at: Instant) {
        if let Some(d) = self.deadlines.get_mut(slot) {
            *d = Some(at);
            self.earliest = Some(self.earliest.map_or(at, |e| e.min(at)));
        }
    }

    pub(crate) fn cancel(&mut self, slot: usize) {
        if let Some(d) = self.deadlines.get_mut(slot) {
            *d = None;
        }
    }

    /// A lower bound on the next deadline (a wake-up at it may find nothing due).
    pub(crate) fn next_timeout(&self) -> Option<Instant> {
        self.earliest
    }

    /// Disarm and visit every slot due at `now`, then recompute the bound.
    pub(crate) fn expire(&mut self, now: Instant, mut visit: impl FnMut(usize)) {
        if self.earliest.is_none_or(|e| e > now) {
            return;
        }
        let mut earliest = None;
        for (slot, d) in self.deadlines.iter_mut().enumerate() {
            match *d {
                Some(t) if t <= now => {
                    *d = None;
                    visit(slot);
                }
                Some(t) => earliest = Some(earliest.map_or(t, |e: Instant| e.min(t))),
                None => {}
            }
        }
        // `visit` may not arm timers (it only queues resends), so this bound is exact.
        self.earliest = earliest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_expires_only_due_timers() {
        let mut t = TimerTable::default();
        t.set(Timer::Probe, Instant::from_millis(5));
        t.set(Timer::JoinResend, Instant::from_millis(3));
        assert_eq!(t.next_timeout(), Some(Instant::from_millis(3)));
        assert!(!t.expire(Timer::Probe, Instant::from_millis(4)));
        assert!(t.expire(Timer::JoinResend, Instant::from_millis(4)));
        assert_eq!(t.next_timeout(), Some(Instant::from_millis(5)));
    }

    #[test]
    fn slot_timers_keep_a_lower_bound() {
        let mut s = SlotTimers::<4>::new();
        s.arm(1, Instant::from_millis(10));
        s.arm(2, Instant::from_millis(7));
        s.cancel(2);
        // Stale bound: a wake-up at 7 finds nothing and tightens the bound.
        assert_eq!(s.next_timeout(), Some(Instant::from_millis(7)));
        let mut hit = heapless::Vec::<usize, 4>::new();
        s.expire(Instant::from_millis(7), |i| hit.push(i).unwrap());
        assert!(hit.is_empty());
        assert_eq!(s.next_timeout(), Some(Instant::from_millis(10)));
        s.expire(Instant::from_millis(10), |i| hit.push(i).unwrap());
        assert_eq!(hit, [1]);
        assert_eq!(s.next_timeout(), None);
        s.arm(9, Instant::ZERO); // out of range: ignored
        assert_eq!(s.next_timeout(), None);
    }
}
