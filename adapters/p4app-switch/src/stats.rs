//! What the dialect switch counts, named once: the list that `switchml switch --dialect
//! p4app` prints, its `--metrics` endpoint serves, its admin socket's `stats` answers and
//! `switchml doctor --dialect p4app` reads back and explains.
//!
//! [`Stats::counters`] is the one list (name, value, help, kind); [`Stats::openmetrics`]
//! encodes it with `prometheus-client` like the software switch's endpoint;
//! [`Stats::from_openmetrics`] reads that text back (the doctor's side of the admin
//! socket); [`Stats::findings`] says in words what the counters mean for a stuck job.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use switchml_core::p4app::P4appCounters;

/// The data plane's counters of frames, beside the switch's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameCounters {
    /// Frames received.
    pub received: u64,
    /// Frames sent (replies and ARP replies).
    pub sent: u64,
    /// ARP requests for the switch's IP answered.
    pub arp_replies: u64,
    /// Dropped: a frame to the switch that does not parse (short, lengths, fragments), or
    /// one cut by the receive buffer.
    pub malformed: u64,
    /// Dropped: UDP to the switch's IP on a port outside 0xBEE0–0xBEEF.
    pub wrong_port: u64,
    /// Dropped: a request from a (MAC, IP) that no `UdpSession` registered.
    pub unknown_sender: u64,
    /// Replies not sent: a rank of the session that has not registered yet.
    pub unregistered: u64,
    /// Replies the interface refused.
    pub send_errors: u64,
    /// Ignored: another host's frames, other protocols, ARP for other IPs.
    pub other: u64,
}

/// Which socket the frames came through and went out of (`--io`): the AF_XDP sockets
/// (the dialect's UDP ports, steered by the XDP program) or the AF_PACKET socket (every
/// frame without `--io xdp`; ARP and whatever the program passes with it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathCounters {
    /// Frames received through an AF_XDP socket.
    pub received_af_xdp: u64,
    /// Frames received through the AF_PACKET socket.
    pub received_af_packet: u64,
    /// Frames sent through an AF_XDP socket.
    pub sent_af_xdp: u64,
    /// Frames sent through the AF_PACKET socket.
    pub sent_af_packet: u64,
}

/// Everything counted: the frames and the dialect switch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames.
    pub frames: FrameCounters,
    /// The sockets they went through.
    pub paths: PathCounters,
    /// The switch's verdicts on the requests it was handed.
    pub switch: P4appCounters,
    /// The session's worker count (0 before the first `UdpSession`).
    pub workers: u16,
    /// Ranks registered in this session.
    pub registered: u16,
    /// Bit `r` set: rank `r` (of the first 64) has registered its MAC and IP.
    pub registered_ranks: u64,
}

/// What a counter counts, for the reader's eye.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterKind {
    /// Work done: frames, replies, sets.
    Work,
    /// A frame dropped, for the counter's reason.
    Dropped,
    /// A reply not sent.
    NotSent,
    /// Traffic that was not for this switch.
    Ignored,
}

impl CounterKind {
    /// How a line about a counter of this kind begins ("dropped: …"), empty for work.
    pub const fn prefix(self) -> &'static str {
        match self {
            CounterKind::Work => "",
            CounterKind::Dropped => "dropped: ",
            CounterKind::NotSent => "not sent: ",
            CounterKind::Ignored => "ignored: ",
        }
    }
}

/// One counter with its name and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// Its name (`switchml_p4app_<name>_total` in the metrics).
    pub name: &'static str,
    /// Its value.
    pub value: u64,
    /// What it counts.
    pub help: &'static str,
    /// Its kind.
    pub kind: CounterKind,
}

/// Where a counter lives in [`Stats`].
type Field = fn(&mut Stats) -> &mut u64;

/// Every counter: its name, help, kind and field, in [`Stats::counters`]'s order (the one
/// list: printing, metrics, reading back).
const COUNTERS: [(&str, &str, CounterKind, Field); 23] = {
    use CounterKind::*;
    [
        ("received", "frames received", Work, |s| {
            &mut s.frames.received
        }),
        ("sent", "frames sent", Work, |s| &mut s.frames.sent),
        (
            "received_af_xdp",
            "frames received through AF_XDP (--io xdp)",
            Work,
            |s| &mut s.paths.received_af_xdp,
        ),
        (
            "received_af_packet",
            "frames received through the AF_PACKET socket",
            Work,
            |s| &mut s.paths.received_af_packet,
        ),
        (
            "sent_af_xdp",
            "frames sent through AF_XDP (--io xdp)",
            Work,
            |s| &mut s.paths.sent_af_xdp,
        ),
        (
            "sent_af_packet",
            "frames sent through the AF_PACKET socket",
            Work,
            |s| &mut s.paths.sent_af_packet,
        ),
        (
            "arp_replies",
            "ARP requests for the switch's IP answered",
            Work,
            |s| &mut s.frames.arp_replies,
        ),
        (
            "multicast",
            "sets completed, the result sent to every worker",
            Work,
            |s| &mut s.switch.multicast,
        ),
        (
            "unicast",
            "stored results sent again to a retransmitter",
            Work,
            |s| &mut s.switch.unicast,
        ),
        (
            "consumed",
            "contributions taken without a reply",
            Work,
            |s| &mut s.switch.consumed,
        ),
        (
            "malformed_frame",
            "frames that do not parse",
            Dropped,
            |s| &mut s.frames.malformed,
        ),
        (
            "wrong_port",
            "UDP outside ports 0xBEE0-0xBEEF",
            Dropped,
            |s| &mut s.frames.wrong_port,
        ),
        (
            "unknown_sender",
            "a (MAC, IP) no UdpSession registered",
            Dropped,
            |s| &mut s.frames.unknown_sender,
        ),
        ("malformed", "a header that does not parse", Dropped, |s| {
            &mut s.switch.malformed
        }),
        (
            "size",
            "a size code other than 1 (64) or 3 (256)",
            Dropped,
            |s| &mut s.switch.size,
        ),
        ("too_large", "more values than a slot holds", Dropped, |s| {
            &mut s.switch.too_large
        }),
        (
            "unknown_rank",
            "no session, or a rank beyond it",
            Dropped,
            |s| &mut s.switch.unknown_rank,
        ),
        ("slot", "a slot beyond the switch's", Dropped, |s| {
            &mut s.switch.slot
        }),
        (
            "incomplete",
            "a retransmission into a set not yet complete",
            Dropped,
            |s| &mut s.switch.incomplete,
        ),
        ("buffer_too_small", "no room for the reply", Dropped, |s| {
            &mut s.switch.buffer_too_small
        }),
        (
            "unregistered",
            "a rank that has not registered",
            NotSent,
            |s| &mut s.frames.unregistered,
        ),
        ("send_errors", "the interface refused", NotSent, |s| {
            &mut s.frames.send_errors
        }),
        (
            "other",
            "frames for other hosts or protocols",
            Ignored,
            |s| &mut s.frames.other,
        ),
    ]
};

impl Stats {
    /// Every counter, work first, then drops by reason, then replies not sent, then the
    /// frames that were not for this switch.
    pub fn counters(&self) -> impl Iterator<Item = Counter> {
        let mut copy = *self;
        COUNTERS
            .into_iter()
            .map(move |(name, help, kind, field)| Counter {
                name,
                value: *field(&mut copy),
                help,
                kind,
            })
    }

    /// Set the counter named `name` (one of [`Stats::counters`]'s); false if none is.
    fn set(&mut self, name: &str, value: u64) -> bool {
        match COUNTERS.iter().find(|c| c.0 == name) {
            Some((.., field)) => {
                *field(self) = value;
                true
            }
            None => false,
        }
    }

    /// The counters in the OpenMetrics text format: `switchml_p4app_<name>_total` for
    /// work, `switchml_p4app_dropped_total{reason=…}`, `switchml_p4app_not_sent_total
    /// {reason=…}`, `switchml_p4app_other_total`, and the session's gauges
    /// `switchml_p4app_session_workers`, `…_registered` and `…_registered_ranks` (a bitmap).
    pub fn openmetrics(&self) -> String {
        let mut registry = Registry::with_prefix("switchml_p4app");
        registry.register_collector(Box::new(Encoded(*self)));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry)
            .expect("writing to a String cannot fail");
        text
    }

    /// Read [`Stats::openmetrics`]'s text back; `None` if it holds none of its lines.
    pub fn from_openmetrics(text: &str) -> Option<Stats> {
        let mut stats = Stats::default();
        let mut seen = false;
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((metric, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Some(metric) = metric.strip_prefix("switchml_p4app_") else {
                continue;
            };
            let Ok(value) = value.parse::<u64>() else {
                continue;
            };
            let name = match metric.split_once("_total{reason=\"") {
                Some((_, reason)) => reason.trim_end_matches("\"}"),
                None => metric.strip_suffix("_total").unwrap_or(metric),
            };
            seen |= match name {
                "session_workers" => {
                    stats.workers = value as u16;
                    true
                }
                "session_registered" => {
                    stats.registered = value as u16;
                    true
                }
                "session_registered_ranks" => {
                    stats.registered_ranks = value;
                    true
                }
                name => stats.set(name, value),
            };
        }
        seen.then_some(stats)
    }

    /// The session's ranks (of the first 64) that have not registered their MAC and IP.
    pub fn missing_ranks(&self) -> impl Iterator<Item = u16> + '_ {
        (0..self.workers.min(64)).filter(|r| self.registered_ranks & (1 << r) == 0)
    }

    /// What the counters say about a job that does not finish, one sentence each (empty
    /// when nothing looks wrong).
    pub fn findings(&self) -> Vec<String> {
        let (f, w) = (self.frames, self.switch);
        let mut out = Vec::new();
        if self.workers == 0 {
            out.push(
                "no session: no client has called Session.UdpSession on the control plane \
                 (is the client's --controller address this switch's?)"
                    .into(),
            );
        } else if self.registered < self.workers {
            let missing: Vec<String> = self.missing_ranks().map(|r| r.to_string()).collect();
            out.push(format!(
                "{} of {} ranks registered; missing: rank {} (their results cannot be sent: \
                 {} replies held back so far)",
                self.registered,
                self.workers,
                missing.join(", "),
                f.unregistered
            ));
        }
        if f.unknown_sender > 0 {
            out.push(format!(
                "{} frames came from a (MAC, IP) that no UdpSession registered: a client whose \
                 address changed, or traffic not from this session",
                f.unknown_sender
            ));
        }
        if f.wrong_port > 0 {
            out.push(format!(
                "{} frames to the switch's IP on a port outside 0xBEE0-0xBEEF",
                f.wrong_port
            ));
        }
        if w.size + w.too_large > 0 {
            out.push(format!(
                "{} packets of a size this switch does not take (64 or 256 values)",
                w.size + w.too_large
            ));
        }
        if w.incomplete > 0 {
            out.push(format!(
                "{} retransmissions into sets not yet complete: some rank's contribution \
                 is missing (lost, or that rank is not sending)",
                w.incomplete
            ));
        }
        if f.send_errors > 0 {
            out.push(format!(
                "{} replies the interface refused to send",
                f.send_errors
            ));
        }
        if f.malformed + w.malformed + w.slot + w.unknown_rank > 0 {
            out.push(format!(
                "{} frames dropped as malformed, for a slot beyond the switch's, or for a \
                 rank beyond the session",
                f.malformed + w.malformed + w.slot + w.unknown_rank
            ));
        }
        out
    }
}

/// One scrape's counters.
#[derive(Debug)]
struct Encoded(Stats);

impl Collector for Encoded {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let families = [
            (CounterKind::Dropped, "dropped", "Frames dropped, by reason"),
            (
                CounterKind::NotSent,
                "not_sent",
                "Replies not sent, by reason",
            ),
        ];
        for c in s.counters() {
            if matches!(c.kind, CounterKind::Work | CounterKind::Ignored) {
                let help = c.help;
                ConstCounter::new(c.value).encode(encoder.encode_descriptor(
                    c.name,
                    help,
                    None,
                    MetricType::Counter,
                )?)?;
            }
        }
        for (kind, name, help) in families {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for c in s.counters().filter(|c| c.kind == kind) {
                let labels = [("reason", c.name)];
                ConstCounter::new(c.value).encode(family.encode_family(&labels)?)?;
            }
        }
        let gauges = [
            (
                "session_workers",
                "The session's worker count (0: no session)",
                u64::from(s.workers),
            ),
            (
                "session_registered",
                "Ranks that registered their MAC and IP",
                u64::from(s.registered),
            ),
            (
                "session_registered_ranks",
                "Bit r set: rank r has registered",
                s.registered_ranks,
            ),
        ];
        for (name, help, value) in gauges {
            // A gauge holds an i64; the bitmap of rank 63 would not fit, so it is cut there.
            let value = i64::try_from(value).unwrap_or(i64::MAX);
            ConstGauge::new(value).encode(encoder.encode_descriptor(
                name,
                help,
                None,
                MetricType::Gauge,
            )?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Stats {
        let mut s = Stats {
            workers: 3,
            registered: 2,
            registered_ranks: 0b101,
            ..Stats::default()
        };
        let names: Vec<&str> = s.counters().map(|c| c.name).collect();
        for (i, name) in names.into_iter().enumerate() {
            assert!(s.set(name, 100 + i as u64), "{name}");
        }
        s
    }

    #[test]
    fn every_counter_has_a_distinct_name_that_sets_it() {
        let s = sample();
        let values: Vec<u64> = s.counters().map(|c| c.value).collect();
        let expected: Vec<u64> = (0..values.len() as u64).map(|i| 100 + i).collect();
        assert_eq!(values, expected);
        let mut names: Vec<&str> = s.counters().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), values.len());
    }

    #[test]
    fn the_metrics_text_reads_back_to_the_same_counters() {
        let s = sample();
        let text = s.openmetrics();
        for line in [
            "switchml_p4app_received_total 100",
            "switchml_p4app_dropped_total{reason=\"incomplete\"} 118",
            "switchml_p4app_not_sent_total{reason=\"send_errors\"} 121",
            "switchml_p4app_other_total 122",
            "switchml_p4app_session_workers 3",
            "switchml_p4app_session_registered_ranks 5",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} missing:\n{text}");
        }
        assert_eq!(Stats::from_openmetrics(&text), Some(s));
        assert_eq!(
            Stats::from_openmetrics("ok\nswitchml_received_total 3\n"),
            None
        );
    }

    #[test]
    fn the_findings_name_the_missing_rank_and_the_incomplete_sets() {
        let s = sample();
        let findings = s.findings().join("\n");
        assert!(findings.contains("missing: rank 1 "), "{findings}");
        assert!(findings.contains("118 retransmissions into sets not yet complete"));
        assert!(Stats::default().findings()[0].starts_with("no session"));
        let healthy = Stats {
            workers: 2,
            registered: 2,
            registered_ranks: 0b11,
            ..Stats::default()
        };
        assert!(healthy.findings().is_empty());
    }
}
