//! `switchml switch`: the software switch daemon as its own process.
//!
//! It prints the address it listens on first (so that a launcher can use port 0), serves
//! until SIGINT or SIGTERM, and then prints the final counters.

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::json;
use switchml_switchd::{RunningSwitch, SwitchConfig};

use crate::report::{counters_json, counters_text};

/// Say where job `id` sits in a tree of switches (docs/protocol.md §7).
fn place(config: &SwitchConfig, id: u16) -> String {
    if config.parent_jobs.contains(&id) {
        return "a parent (its ranks are child switches)".into();
    }
    match config.child_jobs.iter().find(|c| c.job == id) {
        Some(c) => format!(
            "a child: global ranks {}..{} of {}, member {} of {} of job {} at {}",
            c.rank_lo,
            u32::from(c.rank_lo)
                + u32::from(
                    config
                        .jobs
                        .iter()
                        .find(|j| j.id == id)
                        .map_or(0, |j| j.world)
                ),
            c.world,
            c.member,
            c.members,
            c.parent_job,
            c.parent
        ),
        None => "flat".into(),
    }
}

/// Run the daemon; return the exit code.
pub fn switch(config: SwitchConfig, report_every: u64, json_out: bool) -> i32 {
    let stop = crate::signal::stop_flag();
    let (jobs, drop_rate, seed) = (config.jobs.clone(), config.drop_rate, config.seed);
    let pipeline = config.pipeline;
    let places: Vec<String> = jobs.iter().map(|j| place(&config, j.id)).collect();
    let sw = match RunningSwitch::start(&config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    if json_out {
        let jobs: Vec<_> = jobs
            .iter()
            .zip(&places)
            .map(|(j, p)| json!({"job": j.id, "world": j.world, "slots": j.slots, "tier": p}))
            .collect();
        println!(
            "{}",
            json!({"listening": sw.addr().to_string(), "shards": sw.shards(), "epoch": sw.epoch(), "pipeline": pipeline.name(), "jobs": jobs, "drop_rate": drop_rate})
        );
    } else {
        let last = sw.addr().port() as usize + sw.shards() - 1;
        println!(
            "listening on {} (epoch {:#010x}, {pipeline} pipeline, {} shard(s): ports {}..={last})",
            sw.addr(),
            sw.epoch(),
            sw.shards(),
            sw.addr().port()
        );
        for (j, p) in jobs.iter().zip(&places) {
            println!("  job {}: {} ranks, {} slots, {p}", j.id, j.world, j.slots);
        }
        if drop_rate > 0.0 {
            println!(
                "  losing {:.2}% of datagrams each way (seed {seed})",
                drop_rate * 100.0
            );
        }
    }
    let _ = std::io::stdout().flush();
    let mut last = Instant::now();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) && sw.is_running() {
        std::thread::sleep(Duration::from_millis(50));
        if report_every > 0 && last.elapsed() >= Duration::from_secs(report_every) {
            last = Instant::now();
            let c = sw.counters();
            if json_out {
                println!("{}", counters_json(&c));
            } else {
                print!("{}", counters_text(&c));
            }
            let _ = std::io::stdout().flush();
        }
    }
    match sw.stop() {
        Ok(c) => {
            if json_out {
                println!(
                    "{}",
                    json!({"stopped": true, "counters": counters_json(&c)})
                );
            } else {
                println!("stopped; final counters:");
                print!("{}", counters_text(&c));
            }
            0
        }
        Err(e) => {
            eprintln!("error: the switch failed: {e}");
            1
        }
    }
}
