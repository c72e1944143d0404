//! Printing: every report is either lines for a person or one JSON object (`--json`).

use serde_json::{json, Value};
use switchml_core::switch::DropReason;
use switchml_core::wire::DROP_CLASSES;
use switchml_switchd::{DaemonCounters, JobTraffic};

/// Drop counters by reason name, only the non-zero ones.
pub fn drops(dropped: &[u64; DROP_CLASSES]) -> Value {
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
    let mut map = serde_json::Map::new();
    for (name, value) in j.named() {
        map.insert(name.to_string(), json!(value));
    }
    Value::Object(map)
}

/// The daemon's counters as JSON.
pub fn counters_json(c: &DaemonCounters) -> Value {
    let mut map = serde_json::Map::new();
    for (name, value) in c.named() {
        map.insert(name.to_string(), json!(value));
    }
    map.insert("total_drops".into(), json!(c.total_drops()));
    map.insert("drops".into(), drops(&c.switch.dropped));
    map.insert("jobs".into(), c.jobs.iter().map(job_json).collect());
    Value::Object(map)
}

/// The daemon's counters for a person.
pub fn counters_text(c: &DaemonCounters) -> String {
    let mut s = format!(
        "switch: received {} sent {} (send failures {}), injected losses {}, drops {} {}\n",
        c.received,
        c.sent,
        c.send_failures,
        c.injected_losses,
        c.total_drops(),
        drops(&c.switch.dropped)
    );
    if c.throttled > 0 || c.replies_limited > 0 || c.status_off > 0 {
        s += &format!(
            "  limited per source: {} datagrams dropped unread (their source sent too many \
             that failed authentication), {} answers to strangers not sent; {} Status \
             unanswered (--status off)\n",
            c.throttled, c.replies_limited, c.status_off
        );
    }
    if c.cookies > 0 {
        s += &format!(
            "  {} Joins and Statuses answered with a Cookie (protocol.md §4.2)\n",
            c.cookies
        );
    }
    if c.unknown_job > 0 {
        s += &format!(
            "  {} datagrams named a job this switch does not serve\n",
            c.unknown_job
        );
    }
    if c.recv_errors > 0 || c.expired_runs > 0 {
        s += &format!(
            "  receive errors: {}, idle runs released: {}\n",
            c.recv_errors, c.expired_runs
        );
    }
    for j in &c.jobs {
        let w = &j.switch;
        s += &format!(
            "  job {}: received {} replies {} multicasts {} sent {}; contributions {} completions {} runs {} unauthorized {} rejected {}\n",
            j.job, j.received, j.replies, j.multicasts, j.sent, w.contributions, w.completions, w.runs, w.unauthorized, w.rejected
        );
        if j.upward > 0 || j.from_parent > 0 {
            s += &format!(
                "    to its parent switch {}, from it {}\n",
                j.upward, j.from_parent
            );
        }
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
