//! What a run reports, and its JSON form.

use serde_json::{json, Value};

use crate::clock::Nanos;
use crate::link::LinkStats;
use crate::scenario::Scenario;

/// The protocol's counters over a run, summed over the workers, and the switch's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtocolCounters {
    /// Contributions the workers sent, first sends and resends.
    pub sent: u64,
    /// Resends among them (protocol.md §6.1: a Probe's answer or an unanswered Probe).
    pub retransmissions: u64,
    /// Probes the workers sent to ask about a late use before resending it.
    pub probes: u64,
    /// Probes answered "held, still collecting": resends the paper's recovery would make.
    pub probe_waits: u64,
    /// Probes answered "complete" whose Result was fetched by a second Probe: resends saved.
    pub fetches: u64,
    /// Uses suspected lost because later uses completed first (before any timeout).
    pub suspected: u64,
    /// Results the workers accepted.
    pub results: u64,
    /// Results the workers ignored as stale or duplicate.
    pub stale_results: u64,
    /// Uses the switch completed (each multicast once).
    pub switch_completions: u64,
    /// Resends and fetching Probes the switch answered with a stored result (unicast).
    pub switch_retransmit_replies: u64,
    /// Resends the switch dropped because it already had that rank's contribution.
    pub switch_duplicates: u64,
    /// Contributions the switch dropped as older than the slot's use.
    pub switch_stale: u64,
    /// Every drop the switch counted.
    pub switch_drops: u64,
    /// Decreases of the workers' congestion windows on marks, delay and loss (protocol.md
    /// §6.3).
    pub cwnd_decreases: [u64; 3],
    /// Fresh uses that waited for a full congestion window.
    pub cwnd_waits: u64,
    /// The workers' congestion windows at the end, summed.
    pub cwnd_end: u64,
}

impl ProtocolCounters {
    /// Add one worker's counters (a rank's lane).
    pub fn add_worker(&mut self, s: &switchml_core::worker::Stats) {
        self.sent += s.sent;
        self.retransmissions += s.retransmissions;
        self.probes += s.probes;
        self.probe_waits += s.probe_waits;
        self.fetches += s.fetches;
        self.suspected += s.suspected;
        self.results += s.results;
        self.stale_results += s.stale_results;
        self.cwnd_decreases[0] += s.cwnd_mark_decreases;
        self.cwnd_decreases[1] += s.cwnd_delay_decreases;
        self.cwnd_decreases[2] += s.cwnd_loss_decreases;
        self.cwnd_waits += s.cwnd_waits;
        self.cwnd_end += s.cwnd;
    }
}

/// One run's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// `switchml` or `ring`.
    pub algorithm: &'static str,
    /// From the start to the last rank's last result; `None` if some rank never finished.
    pub completion: Option<Nanos>,
    /// Each rank's finishing time since the start.
    pub finish_times: Vec<Option<Nanos>>,
    /// Elements of each rank's tensor.
    pub elements: usize,
    /// Each rank's uplink (rank → switch).
    pub uplinks: Vec<LinkStats>,
    /// Each rank's downlink (switch → rank).
    pub downlinks: Vec<LinkStats>,
    /// The protocol's counters (in-network runs only).
    pub protocol: Option<ProtocolCounters>,
    /// What went wrong, per rank that failed.
    pub failures: Vec<String>,
    /// Result elements that differ from the exact sum.
    pub wrong_elements: u64,
    /// Events the simulator handled.
    pub events: u64,
    /// Host seconds the simulation took.
    pub wall_secs: f64,
}

impl RunReport {
    /// Return the aggregated elements per second: tensor elements over completion time
    /// (the paper's "aggregated tensor elements per second").
    pub fn elements_per_sec(&self) -> Option<f64> {
        let t = self.completion? as f64 * 1e-9;
        Some(self.elements as f64 / t)
    }

    /// Return each link's busy fraction of the completion time.
    pub fn utilisation(links: &[LinkStats], completion: Nanos) -> Vec<f64> {
        links
            .iter()
            .map(|l| l.busy_ps as f64 / (completion.max(1) as f64 * 1000.0))
            .collect()
    }

    /// Return the packets lost in the channels and dropped at full queues, every link.
    pub fn network_drops(&self) -> (u64, u64) {
        let all = self.uplinks.iter().chain(&self.downlinks);
        all.fold((0, 0), |(l, t), s| (l + s.lost, t + s.tail_dropped))
    }

    /// Return the report as JSON, with the scenario that produced it.
    pub fn to_json(&self, scenario: &Scenario) -> Value {
        let completion = self.completion.unwrap_or(0);
        let up = Self::utilisation(&self.uplinks, completion);
        let down = Self::utilisation(&self.downlinks, completion);
        let (lost, tail_dropped) = self.network_drops();
        let uplink_lost: u64 = self.uplinks.iter().map(|l| l.lost).sum();
        let protocol = self.protocol.map(|p| {
            let drops = lost + tail_dropped;
            json!({
                "sent": p.sent,
                "retransmissions": p.retransmissions,
                "resends_per_drop": (drops > 0).then(|| p.retransmissions as f64 / drops as f64),
                "probes": p.probes,
                "probe_waits": p.probe_waits,
                "fetches": p.fetches,
                "suspected": p.suspected,
                "results": p.results,
                "stale_results": p.stale_results,
                "switch_completions": p.switch_completions,
                "switch_retransmit_replies": p.switch_retransmit_replies,
                "switch_duplicates": p.switch_duplicates,
                "switch_stale": p.switch_stale,
                "switch_drops": p.switch_drops,
                "cwnd_mark_decreases": p.cwnd_decreases[0],
                "cwnd_delay_decreases": p.cwnd_decreases[1],
                "cwnd_loss_decreases": p.cwnd_decreases[2],
                "cwnd_waits": p.cwnd_waits,
                "cwnd_end": p.cwnd_end,
            })
        });
        json!({
            "algorithm": self.algorithm,
            "scenario": {
                "workers": scenario.workers,
                "gbps": scenario.bits_per_sec as f64 / 1e9,
                "propagation_ns": scenario.propagation,
                "switch_latency_ns": scenario.switch_latency,
                "loss": scenario.loss,
                "loss_on": format!("{:?}", scenario.loss_on).to_lowercase(),
                "queue_bytes": scenario.queue_bytes,
                "elements": scenario.elements,
                "bucket_elements": scenario.bucket_elements,
                "k": scenario.count,
                "window": scenario.window,
                "rto_us": scenario.rto_us,
                "max_rto_us": scenario.max_rto_us,
                "rto_stagger_us": scenario.rto_stagger_us,
                "dtype": format!("{:?}", scenario.dtype).to_lowercase(),
                "seed": scenario.seed,
                "straggler_delay_ns": scenario.straggler.delay,
                "straggler_gbps": scenario.straggler.bits_per_sec.map(|b| b as f64 / 1e9),
                "switch": format!("{:?}", scenario.switch),
                "congestion": scenario.congestion,
                "mark_bytes": (scenario.mark_bytes != u64::MAX).then_some(scenario.mark_bytes),
                "competing_flow": scenario.competing_flow,
            },
            "finished": self.completion.is_some(),
            "completion_ns": self.completion,
            "elements_per_sec": self.elements_per_sec(),
            "finish_times_ns": self.finish_times,
            "uplink_utilisation": up,
            "downlink_utilisation": down,
            "uplink_wire_bytes": self.uplinks.iter().map(|l| l.wire_bytes).collect::<Vec<_>>(),
            "downlink_wire_bytes": self.downlinks.iter().map(|l| l.wire_bytes).collect::<Vec<_>>(),
            "max_queue_bytes": self.uplinks.iter().chain(&self.downlinks).map(|l| l.max_queue_bytes).max(),
            "lost": lost,
            "lost_on_uplinks": uplink_lost,
            "tail_dropped": tail_dropped,
            "protocol": protocol,
            "failures": self.failures,
            "wrong_elements": self.wrong_elements,
            "events": self.events,
            "wall_secs": self.wall_secs,
        })
    }
}
