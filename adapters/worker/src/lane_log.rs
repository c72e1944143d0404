//! What a lane logs: its join and its leaving (info, debug), a summary of its resends
//! while there are any (info, at most one per [`SUMMARY_EVERY`]), and the socket problems
//! it otherwise only counts or retries past (warnings, rate-limited by [`LogLimit`]).
//! Stalls and stream failures are the core's to report: with its `log` feature on (this
//! crate turns it on) the worker warns when a slot stops making progress and when the
//! stream fails. All of it goes through `log`, so an application without a logger, or
//! with the `switchml` command's default level (warnings), sees only trouble.

use std::io;

use switchml_core::time::{Duration, Instant};
use switchml_core::wire::{Pretty, TRACE_TARGET};
use switchml_core::worker::{Config, Stats};

use switchml_udp::batch::Failure;
use switchml_udp::log_limit::{check, LogLimit, Suppressed, BURST, WINDOW};

/// The shortest time between two resend summaries of one lane.
pub(crate) const SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// Resends over one summary period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Summary {
    resent: u64,
    sent: u64,
    stale: u64,
    /// How long the period was.
    over: Duration,
}

/// One lane's log: who it is, when it last summed up, and a limit per kind of problem.
#[derive(Debug, Clone)]
pub(crate) struct LaneLog {
    job: u16,
    rank: u16,
    lane: usize,
    /// When the next summary may go out, and the counters at the last one.
    next_summary: Instant,
    summarized: Stats,
    send: LogLimit,
    recv: LogLimit,
}

impl LaneLog {
    /// A log for lane `lane` driving `config`.
    pub(crate) fn new(config: &Config, lane: usize) -> LaneLog {
        LaneLog {
            job: config.job,
            rank: config.rank,
            lane,
            next_summary: Instant::from_micros(0) + SUMMARY_EVERY,
            summarized: Stats::default(),
            send: LogLimit::new(BURST, WINDOW),
            recv: LogLimit::new(BURST, WINDOW),
        }
    }

    /// A datagram sent (`sent`) or received, for a packet trace
    /// (`RUST_LOG=switchml::packet=trace`, protocol.md's message `Display`).
    pub(crate) fn packet(&self, sent: bool, bytes: &[u8]) {
        let arrow = if sent { "→ switch" } else { "← switch" };
        log::trace!(
            target: TRACE_TARGET,
            "job {} rank {} lane {} {arrow}: {}",
            self.job,
            self.rank,
            self.lane,
            Pretty(bytes)
        );
    }

    /// Every rank joined: the run is on.
    pub(crate) fn joined(&self, epoch: u32, config: &Config) {
        log::info!(
            "job {} rank {} lane {}: joined (switch epoch {epoch:#010x}, slots {}..{}, {} values per packet)",
            self.job,
            self.rank,
            self.lane,
            config.slot_lo,
            u32::from(config.slot_lo) + u32::from(config.window),
            config.count
        );
    }

    /// The lane is closing, having left the job (`left`) or aborted work in flight.
    pub(crate) fn closing(&self, stats: &Stats, left: bool) {
        log::debug!(
            "job {} rank {} lane {}: {} after {} tensors, {} contributions sent, {} resent, {} stale results",
            self.job,
            self.rank,
            self.lane,
            if left { "left" } else { "aborted its work in flight" },
            stats.tensors,
            stats.sent,
            stats.retransmissions,
            stats.stale_results
        );
    }

    /// Sum up the resends since the last summary, if there were any and it is time.
    pub(crate) fn tick(&mut self, now: Instant, stats: &Stats, rto: Duration) {
        if now < self.next_summary || !log::log_enabled!(log::Level::Info) {
            return;
        }
        if let Some(s) = self.summary(now, stats) {
            log::info!(
                "job {} rank {} lane {}: {} of {} contributions were resends in the last {}, {} stale results; timeout now {rto}",
                self.job,
                self.rank,
                self.lane,
                s.resent,
                s.sent,
                s.over,
                s.stale
            );
        }
    }

    /// Return what happened since the last summary if it is time for one and something
    /// was resent, and start the next period; `None` otherwise.
    fn summary(&mut self, now: Instant, stats: &Stats) -> Option<Summary> {
        if now < self.next_summary {
            return None;
        }
        let last = std::mem::replace(&mut self.summarized, *stats);
        let over = now.saturating_duration_since(self.next_summary) + SUMMARY_EVERY;
        self.next_summary = now + SUMMARY_EVERY;
        let resent = stats.retransmissions.saturating_sub(last.retransmissions);
        (resent > 0).then(|| Summary {
            resent,
            sent: stats.sent.saturating_sub(last.sent),
            stale: stats.stale_results.saturating_sub(last.stale_results),
            over,
        })
    }

    /// `failed` datagrams of a batch were not sent (the worker resends them); `first` is
    /// the first of them.
    pub(crate) fn send_failed(&mut self, failed: usize, first: Option<Failure>) {
        if failed == 0 {
            return;
        }
        if let Some(n) = check(&mut self.send, log::Level::Warn, module_path!()) {
            let why = first.map_or_else(
                || "the socket stayed full".into(),
                |f| f.error().to_string(),
            );
            log::warn!(
                "job {} rank {} lane {}: {failed} datagrams not sent: {why}{}",
                self.job,
                self.rank,
                self.lane,
                Suppressed(n)
            );
        }
    }

    /// A send failed with `err`: the socket is unusable.
    pub(crate) fn send_error(&mut self, err: &io::Error) {
        if let Some(n) = check(&mut self.send, log::Level::Warn, module_path!()) {
            log::warn!(
                "job {} rank {} lane {}: send failed: {err}{}",
                self.job,
                self.rank,
                self.lane,
                Suppressed(n)
            );
        }
    }

    /// A receive failed with `err`.
    pub(crate) fn recv_failed(&mut self, err: &io::Error) {
        if let Some(n) = check(&mut self.recv, log::Level::Warn, module_path!()) {
            log::warn!(
                "job {} rank {} lane {}: receive failed: {err}{}",
                self.job,
                self.rank,
                self.lane,
                Suppressed(n)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_per_period_and_only_when_something_was_resent() {
        let config = Config::new(4, 1, 2);
        let mut log = LaneLog::new(&config, 0);
        let at = |s: u64| Instant::from_micros(s * 1_000_000);
        let stats = |sent, retransmissions| Stats {
            sent,
            retransmissions,
            ..Stats::default()
        };
        assert_eq!(log.summary(at(9), &stats(50, 3)), None, "not yet");
        assert_eq!(
            log.summary(at(10), &stats(100, 4)),
            Some(Summary {
                resent: 4,
                sent: 100,
                stale: 0,
                over: SUMMARY_EVERY,
            })
        );
        assert_eq!(log.summary(at(15), &stats(150, 4)), None, "too soon");
        assert_eq!(log.summary(at(20), &stats(200, 4)), None, "nothing resent");
        let s = log.summary(at(35), &stats(260, 9)).unwrap();
        assert_eq!((s.resent, s.sent, s.over), (5, 60, Duration::from_secs(15)));
    }
}
