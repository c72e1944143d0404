//! Printing: every report is either lines for a person or one JSON object (`--json`).

use serde_json::{json, Value};
use switchml_core::switch::DropReason;
use switchml_udp::{DaemonCounters, JobTraffic};

/// Drop counters by reason name, only the non-zero ones.
pub fn drops(dropped: &[u64; 12]) -> Value {
    let map: serde_json::Map<String, Value> = DropReason::ALL
        .iter()
        .zip(dropped)
        .filter(|(_, n)| **n > 0)
        .map(|(r, n)| (r.name().to_string(), json!(n)))
        .collect();
    Value::Object(map)
}

/// A job's counters as JSON.
pub fn job_json(j: &JobTraffic) -> Value {
    json!({
        "job": j.job,
        "received": j.received,
        "consumed": j.consumed,
        "multicasts": j.multicasts,
        "unicasts": j.unicasts,
        "sent": j.sent,
        "spoofed": j.spoofed,
        "unroutable": j.unroutable,
        "dropped": drops(&j.dropped),
    })
}

/// The daemon's counters as JSON.
pub fn counters_json(c: &DaemonCounters) -> Value {
    json!({
        "received": c.received,
        "sent": c.sent,
        "send_failures": c.send_failures,
        "bad_source": c.bad_source,
        "recv_errors": c.recv_errors,
        "injected_losses": c.injected_losses,
        "oversized": c.oversized,
        "total_drops": c.total_drops(),
        "unattributed_drops": drops(&c.unattributed),
        "jobs": c.jobs.iter().map(job_json).collect::<Vec<_>>(),
    })
}

/// The daemon's counters for a person.
pub fn counters_text(c: &DaemonCounters) -> String {
    let mut s = format!(
        "switch: received {} sent {} (send failures {}), injected losses {}, oversized {}, bad sources {}, drops {}\n",
        c.received, c.sent, c.send_failures, c.injected_losses, c.oversized, c.bad_source, c.total_drops()
    );
    if c.recv_errors > 0 {
        s += &format!("  receive errors: {}\n", c.recv_errors);
    }
    if c.unattributed.iter().any(|n| *n > 0) {
        s += &format!("  no job: dropped {}\n", drops(&c.unattributed));
    }
    for j in &c.jobs {
        s += &format!(
            "  job {}: received {} consumed {} multicasts {} unicasts {} sent {} spoofed {} unroutable {} dropped {}\n",
            j.job, j.received, j.consumed, j.multicasts, j.unicasts, j.sent, j.spoofed, j.unroutable, drops(&j.dropped)
        );
    }
    s
}

/// Format a rate with an SI prefix: `1.23 G`.
pub fn si(x: f64) -> String {
    let (v, p) = if x >= 1e9 {
        (x / 1e9, "G")
    } else if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    format!("{v:.2} {p}")
}
