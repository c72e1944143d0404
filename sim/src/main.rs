//! `switchml-sim`: simulate one all-reduce and print what it took.
//!
//! ```text
//! cargo run --release -p switchml-sim -- --workers 16 --gbps 100 --mib 100 --algorithm both --json
//! ```

use std::process::ExitCode;

use serde_json::json;
use switchml_sim::in_network::SharedReport;
use switchml_sim::tiered::{self, Tree};
use switchml_sim::{analytic, in_network, ring, Dtype, LossOn, RunReport, Scenario, SwitchModel};

const USAGE: &str = "\
switchml-sim: a discrete-event simulation of one all-reduce on a star of links

  --workers P          ranks (16)
  --gbps G             every link's rate, Gb/s (100)
  --mib M              MiB of tensor per rank (100); or --elements N
  --bucket-mib M       bucket size, two in flight per rank (25)
  --k K                values per packet (256, at most 1024)
  --window S           slots per worker, the pool size (256)
  --prop-ns T          one-way propagation delay per link (1000)
  --switch-ns T        switch latency (0)
  --loss X             loss probability on every link (0)
  --loss-on both|up|down   which links lose (both)
  --queue-kib Q        transmit queue limit per link (16384)
  --rto-us T           first retransmission timeout (1000); --max-rto-us (64000)
  --rto-stagger-us T   rank r's timeouts r*T longer (0)
  --dtype f32|i32      element type (f32)
  --seed N             seed (1)
  --straggler-delay-us T   rank 0 starts T later
  --straggler-gbps G       rank 0's links run at G
  --algorithm switchml|ring|both   (switchml)
  --switch reference|p4-model      the aggregator (reference; the P4 model takes k <= 256)
  --probe-results on|off   the reference switch answers a Probe that asks for a lost Result
                       with the Result (on, as the software switch; off: as P4)
  --children C         two levels: C child switches under a parent (each the --switch),
                       the ranks dealt to them (0: one switch)
  --tier-loss X        loss probability on each child-parent link (0)
  --tier-gbps G        each child-parent link's rate, Gb/s (the ranks' links')
  --congestion on|off|both  the workers' congestion window (protocol.md 6.3): off,
                       on, or both: the same scenario without, then with it (off)
  --mark-kib Q         every queue marks what finds Q KiB ahead of it CONGESTED (no marking)
  --competing-flow     a bulk TCP Reno flow shares rank 0's uplink for the whole run
  --series-ms T        bins of rank 0's uplink's throughput over time (100)
  --json               print JSON instead of a summary
";

struct Args {
    scenario: Scenario,
    /// The congestion settings to run the star's all-reduce with, in order.
    congestion: Vec<bool>,
    tree: Option<Tree>,
    algorithms: Vec<&'static str>,
    json: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut s = Scenario::default();
    let mut algorithms = vec!["switchml"];
    let mut congestion = vec![false];
    let mut json = false;
    let mut tree = Tree {
        children: 0,
        loss: 0.0,
        bits_per_sec: 0,
    };
    while let Some(flag) = args.next() {
        if flag == "--json" {
            json = true;
            continue;
        }
        if flag == "--competing-flow" {
            s.competing_flow = true;
            continue;
        }
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<f64>().map_err(|e| format!("{flag} {v}: {e}"));
        let int = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--workers" => s.workers = int(&value)? as u16,
            "--gbps" => s.bits_per_sec = (num(&value)? * 1e9) as u64,
            "--mib" => s.elements = (num(&value)? * (1 << 18) as f64) as usize,
            "--elements" => s.elements = int(&value)? as usize,
            "--bucket-mib" => s.bucket_elements = (num(&value)? * (1 << 18) as f64) as usize,
            "--k" => s.count = int(&value)? as u16,
            "--window" => s.window = int(&value)? as u16,
            "--prop-ns" => s.propagation = int(&value)?,
            "--switch-ns" => s.switch_latency = int(&value)?,
            "--loss" => s.loss = num(&value)?,
            "--queue-kib" => s.queue_bytes = int(&value)? * 1024,
            "--rto-us" => s.rto_us = int(&value)?,
            "--max-rto-us" => s.max_rto_us = int(&value)?,
            "--rto-stagger-us" => s.rto_stagger_us = int(&value)?,
            "--seed" => s.seed = int(&value)?,
            "--mark-kib" => s.mark_bytes = int(&value)? * 1024,
            "--series-ms" => s.series_bin = int(&value)?.max(1) * 1_000_000,
            "--congestion" => {
                congestion = match value.as_str() {
                    "off" => vec![false],
                    "on" => vec![true],
                    "both" => vec![false, true],
                    other => return Err(format!("--congestion {other}: on, off or both")),
                }
            }
            "--children" => tree.children = int(&value)? as u16,
            "--tier-loss" => tree.loss = num(&value)?,
            "--tier-gbps" => tree.bits_per_sec = (num(&value)? * 1e9) as u64,
            "--straggler-delay-us" => s.straggler.delay = int(&value)? * 1000,
            "--straggler-gbps" => s.straggler.bits_per_sec = Some((num(&value)? * 1e9) as u64),
            "--dtype" => {
                s.dtype = match value.as_str() {
                    "f32" => Dtype::F32,
                    "i32" => Dtype::I32,
                    other => return Err(format!("--dtype {other}: f32 or i32")),
                }
            }
            "--probe-results" => {
                s.probe_results = match value.as_str() {
                    "on" => true,
                    "off" => false,
                    other => return Err(format!("--probe-results {other}: on or off")),
                }
            }
            "--loss-on" => {
                s.loss_on = match value.as_str() {
                    "both" => LossOn::Both,
                    "up" => LossOn::Uplinks,
                    "down" => LossOn::Downlinks,
                    other => return Err(format!("--loss-on {other}: both, up or down")),
                }
            }
            "--switch" => {
                s.switch = match value.as_str() {
                    "reference" => SwitchModel::Reference,
                    "p4-model" => SwitchModel::P4Model,
                    other => return Err(format!("--switch {other}: reference or p4-model")),
                }
            }
            "--algorithm" => {
                algorithms = match value.as_str() {
                    "switchml" => vec!["switchml"],
                    "ring" => vec!["ring"],
                    "both" => vec!["switchml", "ring"],
                    other => return Err(format!("--algorithm {other}: switchml, ring or both")),
                }
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if s.workers == 0 || s.elements == 0 || s.bucket_elements == 0 || s.count == 0 {
        return Err("workers, tensor, bucket and k must be non-zero".into());
    }
    if usize::from(s.count) > in_network::MAX_COUNT
        || usize::from(s.window) > in_network::MAX_WINDOW
        || s.window == 0
    {
        return Err(format!(
            "k must be 1..={} and window 1..={}",
            in_network::MAX_COUNT,
            in_network::MAX_WINDOW
        ));
    }
    let tree = (tree.children > 0).then_some(tree);
    if tree.is_some_and(|t| t.children > s.workers) {
        return Err("--children takes 1..=P children".into());
    }
    // The P4 model's job holds 64 ranks: a child's ranks, or a parent's children.
    let per_switch = tree.map_or(s.workers, |t| {
        s.workers.div_ceil(t.children).max(t.children)
    });
    if s.switch == SwitchModel::P4Model
        && (usize::from(s.count) > usize::from(switchml_p4model::MAX_COUNT) || per_switch > 64)
    {
        return Err("the P4 model takes k <= 256 and 64 ranks a switch".into());
    }
    if tree.is_some() && (s.competing_flow || congestion != [false]) {
        return Err("--competing-flow and --congestion take one switch".into());
    }
    Ok(Args {
        scenario: s,
        congestion,
        tree,
        algorithms,
        json,
    })
}

/// Rank 0's uplink over a run of `completion`: each side's share, Jain's index, the series.
fn shared_json(share: &SharedReport, s: &Scenario, completion: u64) -> serde_json::Value {
    let (job, flow, jain) = share.shares(s.bits_per_sec, completion);
    let u = &share.uplink0;
    json!({
        "job_share": job,
        "flow_share": flow,
        "jain": jain,
        "bin_ns": share.bin,
        "job_bytes": share.job_bytes,
        "flow_bytes": share.flow_bytes,
        "flow_lost": share.flow_lost,
        "flow_decreases": share.flow_decreases,
        "mean_queue_bytes": u.queued_bytes_sum as f64 / u.packets.max(1) as f64,
        "max_queue_bytes": u.max_queue_bytes,
        "marked": u.marked,
        "tail_dropped": u.tail_dropped,
    })
}

fn summary(r: &RunReport) -> String {
    let Some(t) = r.completion else {
        return format!("{}: did not finish: {:?}", r.algorithm, r.failures);
    };
    let up = RunReport::utilisation(&r.uplinks, t);
    let mean = up.iter().sum::<f64>() / up.len() as f64;
    let (lost, tail) = r.network_drops();
    let (resends, probes) = r.protocol.map_or((0, 0), |p| (p.retransmissions, p.probes));
    let cwnd = r
        .protocol
        .filter(|p| p.cwnd_decreases != [0; 3] || p.cwnd_waits > 0)
        .map_or(String::new(), |p| {
            let [m, d, l] = p.cwnd_decreases;
            format!(
                "  cwnd decreases mark {m} delay {d} loss {l}, waits {}",
                p.cwnd_waits
            )
        });
    format!(
        "{:8}  {:10.3} ms  {:6.3} G elements/s  uplinks {:5.1}% busy  lost {lost}  tail-dropped {tail}  \
         resends {resends}  probes {probes}  wrong {}{cwnd}  ({} events in {:.2} s)",
        r.algorithm,
        t as f64 * 1e-6,
        r.elements_per_sec().unwrap_or(0.0) * 1e-9,
        mean * 100.0,
        r.wrong_elements,
        r.events,
        r.wall_secs,
    )
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("switchml-sim: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let s = &args.scenario;
    let mut reports: Vec<RunReport> = Vec::new();
    let mut scenarios: Vec<Scenario> = Vec::new();
    let mut shared: Vec<Option<SharedReport>> = Vec::new();
    for &a in &args.algorithms {
        let runs: &[bool] = if a == "ring" {
            &[false]
        } else {
            &args.congestion
        };
        for &congestion in runs {
            let s = Scenario { congestion, ..*s };
            let (report, share) = match (a, &args.tree) {
                ("ring", _) => (ring::simulate(&s), None),
                (_, Some(tree)) => (tiered::simulate(&s, tree), None),
                (_, None) => {
                    let (r, share) = in_network::simulate_shared(&s);
                    (r, Some(share))
                }
            };
            reports.push(report);
            scenarios.push(s);
            shared.push(share);
        }
    }
    let ok = reports
        .iter()
        .all(|r| r.completion.is_some() && r.wrong_elements == 0);
    if args.json {
        let out = json!({
            "analytic": {
                "line_rate_elements_per_sec": analytic::line_rate_elements_per_sec(s),
                "ring_elements_per_sec": analytic::ring_elements_per_sec(s),
                "window_elements_per_sec": analytic::window_elements_per_sec(s),
                "slot_round_trip_ns": analytic::slot_round_trip(s),
                "bdp_slots": analytic::bdp_slots(s),
                "switchml_link_bytes": analytic::switchml_link_bytes(s),
                "ring_link_bytes": analytic::ring_link_bytes(s),
            },
            "runs": reports
                .iter()
                .zip(&scenarios)
                .zip(&shared)
                .map(|((r, s), share)| {
                    let mut run = r.to_json(s);
                    if let (Some(share), Some(t)) = (share, r.completion) {
                        run["rank0_uplink"] = shared_json(share, s, t);
                    }
                    run
                })
                .collect::<Vec<_>>(),
        });
        println!("{out}");
    } else {
        for ((r, s), share) in reports.iter().zip(&scenarios).zip(&shared) {
            let cc = if r.algorithm == "ring" {
                ""
            } else if s.congestion {
                "cc on   "
            } else {
                "cc off  "
            };
            println!("{cc}{}", summary(r));
            if let (Some(share), Some(t)) = (share, r.completion) {
                let (job, flow, jain) = share.shares(s.bits_per_sec, t);
                let u = &share.uplink0;
                println!(
                    "          rank 0's uplink: job {:5.1}%  flow {:5.1}%  Jain {jain:.3}  \
                     mean queue {:.1} KiB  marked {}  tail-dropped {}  flow lost {}",
                    job * 100.0,
                    flow * 100.0,
                    u.queued_bytes_sum as f64 / u.packets.max(1) as f64 / 1024.0,
                    u.marked,
                    u.tail_dropped,
                    share.flow_lost,
                );
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
