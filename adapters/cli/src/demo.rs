//! `switchml demo`: the software switch and N workers in this process, over loopback UDP.
//! It all-reduces, checks the result against the exact f64 sum, and reports throughput.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use switchml_switchd::JobSpec;
use switchml_worker::{CommConfig, Communicator, Op};

use crate::local_switch::{LocalSwitches, Setup};
use crate::report::{counters_json, counters_text, si};
use crate::run::{run_rank, Dtype, Input, RankRun, Values, Workload};
use crate::tuning::Tuning;

/// The job id the demo and bench use.
pub const JOB: u16 = 1;

/// Where the demo's switch listens: any free port on loopback.
const LOOPBACK: std::net::SocketAddr = std::net::SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::LOCALHOST,
    0,
));

/// What a local run measured.
#[derive(Debug, Clone)]
pub struct LocalRun {
    /// Elements per tensor.
    pub elements: usize,
    /// Iterations.
    pub iterations: u32,
    /// Slowest rank's time inside all-reduce.
    pub elapsed: Duration,
    /// CPU time of the whole process (switch and workers) while the all-reduces ran.
    pub cpu: Duration,
    /// The switch's share of the process's CPU over the whole run (join included): its
    /// shard threads' time over all of the process's.
    pub switch_share: f64,
    /// Resends over all ranks.
    pub retransmissions: u64,
    /// Probes over all ranks: late uses asked about before any resend (protocol.md §6.1).
    pub probes: u64,
    /// Contributions sent over all ranks.
    pub sent: u64,
    /// Largest error against the exact sum.
    pub max_error: f64,
    /// The bound it must stay within.
    pub bound: f64,
    /// Whether every rank's result is right.
    pub verified: bool,
    /// Why not, if not.
    pub problem: Option<String>,
    /// The switch's final counters.
    pub counters: switchml_switchd::DaemonCounters,
}

impl LocalRun {
    /// Aggregated tensor elements per second (the paper's ATE/s): elements reduced per
    /// second, as every worker sees them.
    pub fn elements_per_sec(&self) -> f64 {
        self.elements as f64 * f64::from(self.iterations) / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The lanes, window, count and timeouts of a local run: the flags in `tuning` over the
/// environment and its file over the library's defaults.
pub fn local_config(workers: u16, tuning: &Tuning) -> Result<CommConfig, String> {
    tuning.apply(CommConfig::new(0, workers.max(1), LOOPBACK, JOB))
}

/// Start the switch(es) `setup` says and `workers` ranks in this process and run `w`, each
/// rank set up as `tuned` says (its rank, world, switch, job and key are the run's own).
pub fn run_local(
    workers: u16,
    w: &Workload,
    tuned: &CommConfig,
    setup: Setup,
    progress: &ProgressBar,
) -> Result<LocalRun, String> {
    // A fresh key per run: only this process's ranks can join its switch.
    let key = switchml_switchd::fresh_key();
    let slots = u16::try_from(tuned.slots())
        .map_err(|_| format!("{} slots are more than a job can have", tuned.slots()))?;
    let cpu_before = crate::run::cpu_time();
    let job = JobSpec {
        id: JOB,
        world: workers,
        slots,
        key: Some(key),
    };
    let switches = LocalSwitches::start(job, setup, w.seed)?;
    let barrier = Barrier::new(usize::from(workers));
    let outcomes: Vec<Result<RankRun, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|rank| {
                let (barrier, progress, switches) = (&barrier, progress, &switches);
                s.spawn(move || {
                    let config = tuned
                        .clone()
                        .into_builder()
                        .rank(rank)
                        .world(workers)
                        .switch(switches.addr(rank))
                        .job(JOB)
                        .key(key)
                        .build();
                    let input = Input::new(w, rank, workers);
                    let comm = Communicator::connect(&config).map_err(|e| e.to_string())?;
                    let verify = w.verify && rank == 0;
                    let w = Workload { verify, ..*w };
                    run_rank(&comm, &w, input, Some(barrier), &|_, _| progress.inc(1))
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a worker thread panicked".into()))
            })
            .collect()
    });
    let counters = switches.stop()?;
    let whole = crate::run::cpu_time().saturating_sub(cpu_before);
    let mut run = LocalRun {
        elements: w.elements,
        iterations: w.iterations,
        elapsed: Duration::ZERO,
        cpu: Duration::ZERO,
        switch_share: (counters.cpu.as_secs_f64() / whole.as_secs_f64().max(1e-9)).min(1.0),
        retransmissions: 0,
        probes: 0,
        sent: 0,
        max_error: 0.0,
        bound: 0.0,
        verified: w.verify,
        problem: None,
        counters,
    };
    let mut reference: Option<Values> = None;
    for (rank, outcome) in outcomes.into_iter().enumerate() {
        let r = match outcome {
            Ok(r) => r,
            Err(e) => {
                run.verified = false;
                run.problem.get_or_insert(format!("rank {rank}: {e}"));
                continue;
            }
        };
        run.elapsed = run.elapsed.max(r.elapsed);
        if rank == 0 {
            run.cpu = r.cpu.unwrap_or_default();
        }
        run.retransmissions += r.stats.retransmissions;
        run.probes += r.stats.probes;
        run.sent += r.stats.sent;
        if let Some(c) = r.check {
            run.max_error = c.max_error;
            run.bound = c.bound;
            if let Some(i) = c.first_bad {
                run.verified = false;
                run.problem.get_or_insert(format!(
                    "rank {rank}: element {i} is outside the error bound"
                ));
            }
        }
        match &reference {
            None => reference = Some(r.result),
            Some(x0) if w.verify && x0 != &r.result => {
                run.verified = false;
                run.problem
                    .get_or_insert(format!("rank {rank}'s result differs from rank 0's"));
            }
            Some(_) => {}
        }
    }
    Ok(run)
}

/// `switchml demo`; `switch`: the drop rate, the switch's shards, the child switches.
pub fn demo(workers: u16, w: &Workload, tuning: &Tuning, switch: Setup, json_out: bool) -> i32 {
    let Setup {
        drop_rate,
        shards,
        children,
    } = switch;
    let switches = match children {
        0 => format!("{shards} switch shard(s)"),
        c => format!("{c} child switches under a parent (two levels)"),
    };
    let tuned = match local_config(workers, tuning) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    if !json_out {
        println!(
            "switchml demo: {workers} workers × {} {:?} elements, {} iteration(s), {} lanes × {} slots, {} values/packet, loss {:.1}%, {switches} — switches and workers on 127.0.0.1",
            w.elements, w.dtype, w.iterations, tuned.lanes, tuned.window, values_per_packet(tuned.count), drop_rate * 100.0
        );
    }
    let progress = if json_out {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(u64::from(workers) * u64::from(w.iterations))
    };
    progress.set_style(
        ProgressStyle::with_template(
            "{spinner} all-reduce [{bar:30}] {pos}/{len} rank-iterations {elapsed}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    progress.enable_steady_tick(Duration::from_millis(100));
    let started = Instant::now();
    let run = run_local(workers, w, &tuned, switch, &progress);
    progress.finish_and_clear();
    let run = match run {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let eps = run.elements_per_sec();
    let bytes_per_element = w.dtype.size() as f64;
    if json_out {
        let v = json!({
            "workers": workers,
            "elements": w.elements,
            "dtype": format!("{:?}", w.dtype).to_lowercase(),
            "iterations": w.iterations,
            "seconds": run.elapsed.as_secs_f64(),
            "elements_per_sec": eps,
            "gbytes_per_sec": eps * bytes_per_element / 1e9,
            "cpu_seconds": run.cpu.as_secs_f64(),
            "packets_sent": run.sent,
            "retransmissions": run.retransmissions,
            "probes": run.probes,
            "max_error": run.max_error,
            "error_bound": run.bound,
            "verified": run.verified,
            "problem": run.problem,
            "switch": counters_json(&run.counters),
            "wall_seconds": started.elapsed().as_secs_f64(),
        });
        println!("{v}");
    } else {
        println!(
            "all-reduce: {:.3} s, {}elements/s aggregated ({:.2} GB/s of {:?} per worker)",
            run.elapsed.as_secs_f64(),
            si(eps),
            eps * bytes_per_element / 1e9,
            w.dtype
        );
        println!(
            "packets: {} contributions sent, {} retransmissions, {} probes; CPU {:.2} s for switch + workers",
            run.sent,
            run.retransmissions,
            run.probes,
            run.cpu.as_secs_f64()
        );
        print!("{}", counters_text(&run.counters));
        if w.dtype != Dtype::I32 {
            println!(
                "max error vs f64 sum: {:.3e} (bound {:.3e})",
                run.max_error, run.bound
            );
        }
        match (&run.problem, run.verified) {
            (_, true) => println!("verified: every rank's result matches the exact reference"),
            (Some(p), false) => println!("VERIFICATION FAILED: {p}"),
            (None, false) => println!("not verified (--no-verify)"),
        }
    }
    if run.verified || (!w.verify && run.problem.is_none()) {
        0
    } else {
        1
    }
}

/// Average or sum from a flag.
pub fn op(average: bool) -> Op {
    if average {
        Op::Average
    } else {
        Op::Sum
    }
}

/// A count as set, or what 0 means: the path's (the switch's largest that fits its MTU).
fn values_per_packet(count: u16) -> String {
    match count {
        switchml_worker::config::COUNT_FROM_PATH => "the path's".into(),
        n => n.to_string(),
    }
}
