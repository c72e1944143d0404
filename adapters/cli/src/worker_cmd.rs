//! `switchml worker`: one rank of a job as its own process.
//!
//! Settings come from flags, else the environment a launcher sets (`RANK`, `WORLD_SIZE`,
//! `SWITCHML_SWITCH` or `MASTER_ADDR`, `SWITCHML_JOB`, `SWITCHML_LANES`, ...), else a TOML
//! file (`--config`, else `SWITCHML_CONFIG`), else the library's defaults. Every
//! iteration prints a line as it finishes, so a person (or a test) sees progress; a failure
//! prints the error, which names the rank, lane, slot or missing ranks, and exits 1. With
//! `--json` the report also carries the process's CPU seconds over the timed iterations and
//! that region's start and end as Unix time (bench/run-netbench lines them up with the
//! host's CPU samples).

use std::io::Write;
use std::path::Path;

use serde_json::json;
use switchml_worker::{CommConfig, Communicator};

use crate::run::{run_rank, Input, Workload};
use crate::tuning::{JoinArgs, Tuning};

/// Build the configuration: flags, over the environment, over the TOML file (`--config`,
/// else `SWITCHML_CONFIG`), over the library's defaults.
fn config(join: &JoinArgs, tuning: &Tuning) -> Result<CommConfig, String> {
    tuning
        .settings()
        .layered(join.config.as_deref(), |name| std::env::var(name).ok())
        .and_then(|s| s.config())
        .map_err(|e| e.to_string())
}

/// Run the worker; return the exit code.
pub fn worker(
    join: &JoinArgs,
    w: &Workload,
    tuning: &Tuning,
    output: Option<&Path>,
    json_out: bool,
) -> i32 {
    let config = match config(join, tuning) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let (rank, job) = (config.rank, config.job);
    let input = Input::new(w, rank, config.world);
    let comm = match Communicator::connect(&config) {
        Ok(c) => c,
        Err(e) => return fail(json_out, rank, &e.to_string()),
    };
    let at_start = comm.fallback_stats().reason;
    match (&at_start, json_out) {
        (None, false) => println!(
            "rank {rank}/{} joined job {job} at {} (epoch {:#010x}, {} lanes × {} slots, {} values/packet)",
            config.world, config.switch, comm.epoch(), config.lanes, config.window, comm.config().count
        ),
        (Some(reason), false) => println!(
            "rank {rank}/{}: FALLBACK: job {job} all-reduces over the host ring: {reason}",
            config.world
        ),
        (_, true) => {}
    }
    let tick = |i: u32, t: std::time::Duration| {
        if !json_out {
            println!("iteration {}: {:.3} s", i + 1, t.as_secs_f64());
            let _ = std::io::stdout().flush();
        }
    };
    let run = match run_rank(&comm, w, input, None, &tick) {
        Ok(r) => r,
        Err(e) => return fail(json_out, rank, &e.to_string()),
    };
    if let Some(path) = output {
        if let Err(e) = crate::output::write(path, &run.result) {
            return fail(json_out, rank, &format!("--output {}: {e}", path.display()));
        }
    }
    let eps = w.elements as f64 * f64::from(w.iterations) / run.elapsed.as_secs_f64().max(1e-9);
    let verified = run.check.map(|c| c.ok());
    let fallback = comm.fallback_stats();
    let xdp = comm.xdp_counters();
    if json_out {
        println!(
            "{}",
            json!({
                "rank": rank,
                "job": job,
                "ok": verified != Some(false),
                "verified": verified,
                "max_error": run.check.map(|c| c.max_error),
                "seconds": run.elapsed.as_secs_f64(),
                "elements_per_sec": eps,
                "retransmissions": run.stats.retransmissions,
                "probes": run.stats.probes,
                "probe_waits": run.stats.probe_waits,
                "fetches": run.stats.fetches,
                "datagrams_sent": run.stats.datagrams_sent,
                "datagrams_received": run.stats.datagrams_received,
                "packets_sent": run.stats.sent,
                "stale_results": run.stats.stale_results,
                "srtt_ms": run.timing.iter().filter_map(|t| t.srtt).max().map(ms),
                "rto_ms": run.timing.iter().map(|t| t.rto).max().map(ms),
                "cpu_seconds": run.cpu.map(|c| c.as_secs_f64()),
                "started_unix": run.window.map(|(s, _)| unix_seconds(s)),
                "finished_unix": run.window.map(|(_, f)| unix_seconds(f)),
                "fallbacks": fallback.fallbacks,
                "fallback_tensors": fallback.tensors,
                "fallback_bytes": fallback.bytes,
                "fallback_reason": fallback.reason,
                "xdp_frames_received": xdp.received,
                "xdp_frames_sent": xdp.sent,
            })
        );
    } else {
        println!(
            "done: {} elements × {} in {:.3} s ({} elements/s), {} retransmissions",
            w.elements,
            w.iterations,
            run.elapsed.as_secs_f64(),
            crate::report::si(eps),
            run.stats.retransmissions
        );
        match run.check {
            Some(c) if c.ok() => println!("verified (max error {:.3e})", c.max_error),
            Some(c) => println!("VERIFICATION FAILED at element {:?}", c.first_bad),
            None => {}
        }
        if fallback.fallbacks > 0 {
            println!(
                "FALLBACK: {} all-reduces ({} bytes) went over the host ring, not the switch: {}",
                fallback.tensors,
                fallback.bytes,
                fallback.reason.as_deref().unwrap_or("?")
            );
        }
    }
    i32::from(verified == Some(false))
}

/// Milliseconds, for a person reading JSON.
fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Seconds since the Unix epoch, for lining the timed region up with outside samples.
fn unix_seconds(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn fail(json_out: bool, rank: u16, error: &str) -> i32 {
    if json_out {
        println!("{}", json!({ "rank": rank, "ok": false, "error": error }));
    } else {
        eprintln!("error: {error}");
    }
    1
}
