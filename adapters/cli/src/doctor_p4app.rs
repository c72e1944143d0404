//! `switchml doctor --dialect p4app --admin PATH`: what a p4app-dialect switch knows.
//!
//! The dialect has no Status message (its header has no room for one, and the original
//! client sends none), so the doctor asks the switch's admin socket for its counters (the
//! `stats` answer, the metrics' text) and, given `--switch HOST:PORT`, checks that the
//! gRPC control plane accepts a connection: the client's first step, and the usual reason
//! it "hangs" before sending a packet. It prints the session (workers, the ranks that
//! registered, those missing), every counter that is not zero, and what they mean
//! ([`Stats::findings`]).

use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use switchml_p4app_switch::Stats;

/// How long the control plane has to accept the connection, and the admin socket to answer.
const WAIT: Duration = Duration::from_secs(2);

/// Whether the control plane at `addr` accepts a TCP connection, and how fast.
fn control_plane(addr: &str) -> Result<Duration, String> {
    let addr = switchml_worker::config::resolve("--switch", addr).map_err(|e| e.to_string())?;
    let start = Instant::now();
    TcpStream::connect_timeout(&addr, WAIT)
        .map(|_| start.elapsed())
        .map_err(|e| format!("the control plane at {addr} (gRPC) does not accept: {e}"))
}

/// Ask, print, and return the exit code: 0 healthy, 1 findings, 2 no answer.
pub fn doctor(admin: &Path, control: Option<&str>, json_out: bool) -> i32 {
    let stats = switchml_switchd::admin_request(admin, "stats", WAIT).and_then(|reply| {
        Stats::from_openmetrics(&reply).ok_or_else(|| {
            format!(
                "{} answered, but not with a p4app switch's counters (is it `switchml switch \
                 --dialect p4app`?)",
                admin.display()
            )
        })
    });
    let control = control.map(control_plane);
    let mut findings = match &stats {
        Ok(s) => s.findings(),
        Err(e) => vec![e.clone()],
    };
    if let Some(Err(e)) = &control {
        findings.insert(0, e.clone());
    }
    if json_out {
        let mut v = json!({ "dialect": "p4app", "findings": findings });
        if let Ok(s) = &stats {
            let missing: Vec<u16> = s.missing_ranks().collect();
            v["workers"] = json!(s.workers);
            v["registered"] = json!(s.registered);
            v["missing"] = json!(missing);
            let counters: serde_json::Map<_, _> = s
                .counters()
                .map(|c| (c.name.into(), c.value.into()))
                .collect();
            v["counters"] = json!(counters);
        }
        if let Some(c) = &control {
            v["control_plane_ms"] = json!(c.as_ref().ok().map(|d| d.as_secs_f64() * 1e3));
        }
        println!("{v}");
    } else {
        if let Some(Ok(rtt)) = &control {
            println!(
                "control plane: accepts (connected in {:.2} ms)",
                rtt.as_secs_f64() * 1e3
            );
        }
        if let Ok(s) = &stats {
            println!(
                "session: {} workers, {} registered",
                s.workers, s.registered
            );
            for c in s.counters().filter(|c| c.value > 0) {
                let kind = c.kind.prefix();
                println!("  {:>18} {:>12}  {kind}{}", c.name, c.value, c.help);
            }
        }
        match findings.is_empty() {
            true => println!("nothing looks wrong"),
            false => findings.iter().for_each(|f| println!("- {f}")),
        }
    }
    match (&stats, findings.is_empty()) {
        (Err(_), _) => 2,
        (Ok(_), true) => 0,
        (Ok(_), false) => 1,
    }
}
