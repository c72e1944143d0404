//! What the switch must do with a datagram from an off-path sender — one without the job's
//! key or a run's session (protocol.md §4.1, threat model) — worked out from the spec (§1,
//! §4 and the daemon's two adapter checks) and from the bytes alone: which drop class counts
//! it, or which answer goes back. The wire parser says whether the bytes are a message; the
//! rest is written here by hand, not asked of the switch, so that a test comparing the two
//! checks the switch against the spec.

use std::collections::BTreeMap;

use switchml_core::switch::DropReason;
use switchml_core::wire::{self, AbortReason, Message, MessageType, DROP_CLASSES};

/// The longest datagram the daemon reads whole: anything longer is `Oversized`.
pub const LONGEST: usize = switchml_switchd::MAX_DATAGRAM;

/// A job the switch serves, as an attacker sees it. The key is here only so that the
/// attacker can make sure it never sends it by chance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The job id.
    pub job: u16,
    /// Its world size.
    pub world: u16,
    /// Its slot count.
    pub slots: u16,
    /// Its key.
    pub key: u64,
}

/// What happens to one hostile datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Dropped and counted in this class.
    Dropped(DropReason),
    /// Answered to its source with an Abort of this reason.
    Refused(AbortReason),
}

/// Return the fate of `bytes` sent to a switch serving `targets` by a sender without any
/// key or session (`port_zero`: from UDP source port 0), and the job whose `unauthorized`
/// counter it raises. Sessions the sender made up are taken to miss the run's: one chance
/// in 2³² each.
pub fn fate(bytes: &[u8], port_zero: bool, targets: &[Target]) -> (Fate, Option<u16>) {
    let dropped = |r| (Fate::Dropped(r), None);
    // The daemon's checks, in its order: cut by the receive buffer, then the source.
    if bytes.len() > LONGEST {
        return dropped(DropReason::Oversized);
    }
    if port_zero {
        return dropped(DropReason::BadSource);
    }
    let Ok((kind, job, _)) = wire::peek(bytes) else {
        return dropped(DropReason::Malformed);
    };
    match kind {
        MessageType::Result
        | MessageType::JoinReply
        | MessageType::ProbeReply
        | MessageType::StatusReply => return dropped(DropReason::UnexpectedType),
        MessageType::Unknown(_) => return dropped(DropReason::UnknownType),
        _ => {}
    }
    let Ok(message) = Message::parse(bytes) else {
        return dropped(DropReason::Malformed);
    };
    let Some(target) = targets.iter().find(|t| t.job == job) else {
        return match message {
            Message::Join(_) | Message::Probe(_) => (Fate::Refused(AbortReason::UnknownJob), None),
            _ => dropped(DropReason::UnknownJob),
        };
    };
    let unauthorized = |f| (f, Some(job));
    match message {
        Message::Join(j) => {
            assert!(
                !j.verify(target.key),
                "the attacker signed with job {job}'s key"
            );
            unauthorized(Fate::Refused(AbortReason::BadKey))
        }
        Message::Probe(_) => unauthorized(Fate::Refused(AbortReason::SessionEnded)),
        // Nothing to a Status without the key (protocol.md §3.7, §4.2).
        Message::Status(_) => unauthorized(Fate::Dropped(DropReason::BadSession)),
        _ => unauthorized(Fate::Dropped(DropReason::BadSession)),
    }
}

/// Return the counter index of a drop class.
pub fn class(reason: DropReason) -> usize {
    DropReason::ALL
        .iter()
        .position(|r| *r == reason)
        .expect("every reason has a counter")
}

/// What an attacker sent, what the switch must have done with it, and what came back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Datagrams sent.
    pub sent: u64,
    /// Drops the switch must have counted, by class.
    pub drops: [u64; DROP_CLASSES],
    /// Aborts the switch must have answered, by reason code.
    pub refusals: BTreeMap<u8, u64>,
    /// Per job: messages the switch must have refused for a wrong key or session.
    pub unauthorized: BTreeMap<u16, u64>,
    /// Answers owed to the attacker's own sockets (not to port 0 or a spoofed source).
    pub owed: u64,
    /// Aborts that came back, by reason code.
    pub got_refusals: BTreeMap<u8, u64>,
    /// StatusReplies that came back: a forger is owed none (protocol.md §3.7, §4.2).
    pub got_statuses: u64,
    /// Anything else that came back (a JoinReply, a Result…): must stay empty.
    pub strange: Vec<String>,
}

impl Tally {
    /// Count one datagram sent with this fate; `owed`: its answer comes back to us.
    pub fn record(&mut self, (fate, job): (Fate, Option<u16>), owed: bool) {
        self.sent += 1;
        match fate {
            Fate::Dropped(r) => self.drops[class(r)] += 1,
            Fate::Refused(r) => *self.refusals.entry(r.into()).or_default() += 1,
        }
        if let Some(job) = job {
            *self.unauthorized.entry(job).or_default() += 1;
        }
        if owed && !matches!(fate, Fate::Dropped(_)) {
            self.owed += 1;
        }
    }

    /// Count one datagram that came back to us.
    pub fn answer(&mut self, bytes: &[u8]) {
        match Message::parse(bytes) {
            Ok(Message::Abort(a)) => *self.got_refusals.entry(a.reason.into()).or_default() += 1,
            Ok(Message::StatusReply(_)) => self.got_statuses += 1,
            other => self.strange.push(format!("{other:?}")),
        }
    }

    /// Return how many answers came back.
    pub fn answered(&self) -> u64 {
        self.got_refusals.values().sum::<u64>() + self.got_statuses + self.strange.len() as u64
    }

    /// Return the drops the switch must have counted for `reason`.
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.drops[class(reason)]
    }

    /// Return the Aborts of `reason` the switch must have answered.
    pub fn refusals(&self, reason: AbortReason) -> u64 {
        self.refusals.get(&reason.into()).copied().unwrap_or(0)
    }

    /// Return the answers the switch must have sent (to us or elsewhere).
    pub fn answers(&self) -> u64 {
        self.refusals.values().sum::<u64>()
    }

    /// Return job `job`'s unauthorized messages.
    pub fn unauthorized(&self, job: u16) -> u64 {
        self.unauthorized.get(&job).copied().unwrap_or(0)
    }

    /// Check the answers that came back against the daemon's counters `c`: nothing strange,
    /// no kind more often than owed, and every answer the switch decided on either came
    /// back or was held back by the daemon's per-destination limit (`replies_limited`;
    /// `adapters/switchd/src/source_limit.rs`). Answers to strangers are limited, so that a
    /// forged source gets no more than a small share; what is not sent is counted.
    /// Return how many answers were never decided (their datagrams throttled unread).
    pub fn check_answers(&self, c: &switchml_switchd::DaemonCounters) -> u64 {
        assert!(
            self.strange.is_empty(),
            "answers no attacker may get: {:?}",
            self.strange
        );
        for (reason, got) in &self.got_refusals {
            let owed = self.refusals.get(reason).copied().unwrap_or(0);
            assert!(*got <= owed, "refusals {reason}: {got} back, {owed} owed");
        }
        assert_eq!(self.got_statuses, 0, "a StatusReply to a forger: {self:?}");
        let decided = self.answered() + c.replies_limited;
        assert!(
            decided <= self.answers(),
            "{decided} answers of {}",
            self.answers()
        );
        self.answers() - decided
    }

    /// Check job `job`'s `unauthorized` counter against the tally: each forgery counted,
    /// unless the per-source junk limit dropped it unread (`throttled`), and at most `extra`
    /// more of the job's own ranks' (Leaves after their run ended).
    pub fn check_unauthorized(&self, job: u16, counted: u64, throttled: u64, extra: u64) {
        let forged = self.unauthorized(job);
        assert!(
            counted <= forged + extra && counted + throttled >= forged,
            "job {job}: {counted} unauthorized of {forged} forged, {throttled} throttled"
        );
    }

    /// Check the switch's drop classes against the tally where the daemon's per-source
    /// junk limit may have dropped hostile datagrams unread (`c.throttled`): each class
    /// holds at most what the spec puts there (plus, for a class the job's own ranks
    /// reach, at most their `extra`), and what the classes and the answers miss together is
    /// exactly what was throttled, give or take the ranks' share of their classes.
    pub fn check_drops(
        &self,
        c: &switchml_switchd::DaemonCounters,
        ranks: &[(DropReason, u64)],
        never_decided: u64,
    ) {
        // Everything reached the switch but what the daemon's limits dropped unread and
        // the Joins its endpoint answered with a Cookie (§4.2: the ranks' own).
        assert_eq!(
            c.received,
            c.switch.received + c.throttled + c.status_off + c.cookies,
            "{c:?}"
        );
        let (mut missing, mut slack) = (never_decided, 0);
        for r in DropReason::ALL {
            let (got, want) = (c.switch.drops(r), self.drops[class(r)]);
            let extra = ranks.iter().find(|(k, _)| *k == r).map(|(_, e)| *e);
            match extra {
                Some(u64::MAX) => continue,
                Some(e) => slack += e,
                None => {}
            }
            assert!(
                got <= want + extra.unwrap_or(0),
                "drop class {}: {got}, at most {want} forged",
                r.name()
            );
            missing += want.saturating_sub(got);
        }
        assert!(
            (missing..=missing + slack).contains(&c.throttled),
            "throttled {} of the {missing} (up to {}) hostile datagrams not counted",
            c.throttled,
            missing + slack
        );
    }
}
