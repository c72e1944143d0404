//! A switch you can watch (issue 26, item 6): every counter at `--metrics ADDR` for
//! Prometheus, and the same through the admin socket's `stats`, summed over shards.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use switchml_switchd::admin_request as request;
use switchml_switchd::{RunningSwitch, SwitchConfig};
use switchml_worker::{Communicator, Op};

/// The value of the sample line `name` in a metrics text, if there is one.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

fn curl(url: &str) -> (String, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}", url])
        .output()
        .expect("curl runs (./scripts/test installs it)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", ""));
    (body.to_string(), code.to_string())
}

#[test]
fn metrics_and_admin_stats_show_every_shards_counters() {
    let dir = std::env::temp_dir().join(format!("switchml-watch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let admin = dir.join("admin.sock");
    let world = 2;
    let sw = RunningSwitch::start(&SwitchConfig {
        admin: Some(admin.clone()),
        metrics: Some("127.0.0.1:0".parse().unwrap()),
        shards: 2,
        ..SwitchConfig::new("127.0.0.1:0".parse().unwrap(), vec![job_spec(world, 64)])
    })
    .expect("switch starts");
    let url = format!("http://{}/metrics", sw.metrics_addr().expect("an endpoint"));

    // Before any worker: every counter is there, at zero, once the shards first published
    // (within 50 ms of starting).
    let job_completions = format!("switchml_job_completions_total{{job=\"{JOB}\"}}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let before = loop {
        let (text, code) = curl(&url);
        assert_eq!(code, "200", "{text}");
        if sample(&text, &job_completions).is_some() || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(sample(&before, &job_completions), Some(0.0), "{before}");
    assert_eq!(sample(&before, "switchml_received_total"), Some(0.0));

    let rounds = 3;
    std::thread::scope(|s| {
        for rank in 0..world {
            let addr = sw.addr();
            s.spawn(move || {
                let comm = Communicator::connect(&config(rank, world, addr)).expect("joins");
                for _ in 0..rounds {
                    let mut x = vec![1i32; 1000];
                    comm.allreduce(&mut x, Op::Sum).expect("all-reduce");
                    assert!(x.iter().all(|&v| v == i32::from(world)));
                }
            });
        }
    });

    // 1000 values in 64-value packets on 2 lanes: at least 16 uses per all-reduce, all
    // complete once the ranks return. Shards publish every 50 ms: wait (bounded) until
    // the metrics show them all.
    let completions = job_completions;
    let least = 16 * rounds;
    let deadline = Instant::now() + Duration::from_secs(30);
    let after = loop {
        let (text, code) = curl(&url);
        assert_eq!(code, "200");
        let now = sample(&text, &completions).map_or(0, |v| v as u64);
        if now >= least || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let done = sample(&after, &completions).expect("a completions sample") as u64;
    assert!(done >= least, "{done} completions:\n{after}");
    let received = sample(&after, "switchml_received_total").unwrap();
    assert!(received >= (2 * least) as f64, "{after}");
    assert!(after.contains("switchml_dropped_total{reason=\"stale\"}"));

    // The admin socket says the same, from the same list.
    let stats = request(&admin, "stats", Duration::from_secs(5)).expect("stats");
    assert!(stats.starts_with("ok\n"), "{stats}");
    let stated = sample(&stats, &completions).expect("completions in stats") as u64;
    assert!(stated >= done, "stats {stated} < metrics {done}");

    let (body, code) = curl(&format!("http://{}/other", sw.metrics_addr().unwrap()));
    assert_eq!(code, "404", "{body}");
    sw.stop().expect("stops");
    let _ = std::fs::remove_dir_all(&dir);
}
