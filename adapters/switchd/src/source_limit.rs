//! Per-source token buckets: how much the daemon does for one source address that shows no
//! credential (issue 25, items 4 and 5).
//!
//! Two uses, each its own [`SourceLimit`]:
//!
//! - **Answers to strangers.** A Status reply, an Abort refusing a Join or a Probe (and any
//!   other answer that did not need the job's session) goes to the source address the
//!   datagram claims, which anyone can forge: without a limit the switch reflects whatever
//!   rate it is sent to whatever address is named. Each source gets a small bucket
//!   ([`REPLY_BURST`], refilled at [`REPLY_RATE`] a second); an answer with no token left is
//!   not sent (`replies_limited`).
//! - **Junk.** A datagram that fails authentication (an unknown job, a session that is not
//!   the run's, a Join with the wrong key) costs the shard thread a parse and a lookup that
//!   every other job's traffic waits behind. Each such failure takes a token of its
//!   source's bucket ([`JUNK_BURST`], [`JUNK_RATE`]); a source with none left has its
//!   datagrams dropped on receive, before any parsing (`throttled`), until it has one
//!   again. The burst is far above what a real lane sends that fails honestly (its stale
//!   window after a run ends), so only a flood reaches it.
//!
//! A source is an address and port: ranks behind one address (or on one host's loopback)
//! are told apart, and a flood from one socket is limited without touching them. A stranger
//! forging many source ports gets a bucket per port; what bounds that is that answers to
//! strangers are no larger than what they answer (protocol.md §4.1), and the table is
//! fixed (`SLOTS` entries, a keyed hash, the newest source taking a slot), so memory does
//! not grow with the number of sources. Time is the daemon's core clock; nothing here
//! reads one.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::SocketAddr;

use switchml_core::time::Instant;

/// Answers to one source that need no session, in a burst.
pub const REPLY_BURST: u32 = 16;
/// Answers to one source that need no session, a second, after the burst.
pub const REPLY_RATE: u32 = 16;
/// Datagrams of one source that may fail authentication in a burst before the rest of its
/// datagrams are dropped unread.
pub const JUNK_BURST: u32 = 4096;
/// Failures a second, after the burst, that a source may cost the daemon.
pub const JUNK_RATE: u32 = 4096;

/// The daemon's per-source limits: each a burst and a rate a second (the defaults are this
/// module's constants). A rate of 0 never refills: tests use it to make the counts exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceLimits {
    /// Answers needing no session, per destination: burst.
    pub reply_burst: u32,
    /// Answers needing no session, per destination: a second.
    pub reply_rate: u32,
    /// Authentication failures per source before it is dropped unread: burst.
    pub junk_burst: u32,
    /// Authentication failures per source: a second.
    pub junk_rate: u32,
}

impl Default for SourceLimits {
    fn default() -> SourceLimits {
        SourceLimits {
            reply_burst: REPLY_BURST,
            reply_rate: REPLY_RATE,
            junk_burst: JUNK_BURST,
            junk_rate: JUNK_RATE,
        }
    }
}

/// Sources the table tracks at once.
const SLOTS: usize = 1024;
/// One token, in the unit the buckets count in (a token a second is one of these a µs).
const TOKEN: u64 = 1_000_000;

#[derive(Debug, Clone, Copy)]
struct Entry {
    from: Option<SocketAddr>,
    /// Tokens, in millionths.
    tokens: u64,
    /// When `tokens` was last brought up to date.
    at: Instant,
}

/// A token bucket per source address, in a fixed table.
#[derive(Debug)]
pub struct SourceLimit {
    entries: Vec<Entry>,
    burst: u64,
    /// Millionths of a token a µs: tokens a second.
    rate: u64,
    hasher: RandomState,
}

impl SourceLimit {
    /// Buckets of `burst` tokens refilled at `per_second` each.
    pub fn new(burst: u32, per_second: u32) -> SourceLimit {
        let burst = u64::from(burst) * TOKEN;
        SourceLimit {
            entries: vec![
                Entry {
                    from: None,
                    tokens: burst,
                    at: Instant::ZERO,
                };
                SLOTS
            ],
            burst,
            rate: u64::from(per_second),
            hasher: RandomState::new(),
        }
    }

    /// Return `from`'s bucket, refilled up to `now`; a source new to its slot starts full.
    /// (A keyed hash: which sources share a slot is not a stranger's to choose.)
    fn bucket(&mut self, from: &SocketAddr, now: Instant) -> &mut Entry {
        let i = (self.hasher.hash_one(from) % SLOTS as u64) as usize;
        let (burst, rate) = (self.burst, self.rate);
        let e = &mut self.entries[i];
        if e.from != Some(*from) {
            *e = Entry {
                from: Some(*from),
                tokens: burst,
                at: now,
            };
        }
        let micros = now.saturating_duration_since(e.at).total_micros();
        e.tokens = e
            .tokens
            .saturating_add(micros.saturating_mul(rate))
            .min(burst);
        e.at = e.at.max(now);
        e
    }

    /// Return whether `from` has a token now, taking none.
    pub fn allows(&mut self, from: &SocketAddr, now: Instant) -> bool {
        self.bucket(from, now).tokens >= TOKEN
    }

    /// Take one of `from`'s tokens; return whether it had one.
    pub fn take(&mut self, from: &SocketAddr, now: Instant) -> bool {
        let e = self.bucket(from, now);
        match e.tokens.checked_sub(TOKEN) {
            Some(left) => {
                e.tokens = left;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn a_source_gets_its_burst_then_the_rate_and_others_are_untouched() {
        let mut l = SourceLimit::new(4, 10);
        let a: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let b: SocketAddr = "10.0.0.1:5001".parse().unwrap();
        let taken = (0..100).filter(|_| l.take(&a, at(0))).count();
        assert_eq!(taken, 4, "the burst, at one instant");
        assert!(!l.allows(&a, at(0)));
        // Another port of the same host has its own bucket.
        assert!(l.allows(&b, at(0)));
        assert!(l.take(&b, at(0)));
        // 10 a second: one token after 100 ms, not before.
        assert!(!l.take(&a, at(99)));
        assert!(l.take(&a, at(100)));
        assert!(!l.take(&a, at(100)));
        // Idle long enough, the bucket is full again, never fuller.
        let taken = (0..100).filter(|_| l.take(&a, at(60_000))).count();
        assert_eq!(taken, 4);
    }

    #[test]
    fn allows_takes_nothing_and_a_clock_going_back_adds_nothing() {
        let mut l = SourceLimit::new(1, 1);
        let a: SocketAddr = "[::1]:9".parse().unwrap();
        for _ in 0..10 {
            assert!(l.allows(&a, at(5)));
        }
        assert!(l.take(&a, at(5)));
        assert!(
            !l.allows(&a, at(4)),
            "time before the last reading refills nothing"
        );
        assert!(!l.take(&a, at(5)));
        assert!(l.take(&a, at(1005)));
    }

    #[test]
    fn many_sources_share_a_bounded_table() {
        let mut l = SourceLimit::new(2, 1);
        for port in 1..=20_000u16 {
            let from = SocketAddr::from(([10, 0, 0, 2], port));
            assert!(l.take(&from, at(0)), "a new source starts with its burst");
        }
        assert_eq!(l.entries.len(), SLOTS);
    }
}
