//! An opt-in Prometheus endpoint: `switchml switch --metrics ADDR` serves every counter
//! the daemon keeps (the ones `doctor` and `--json` show) at `http://ADDR/metrics`, in the
//! Prometheus text format.
//!
//! A scrape reads the counters the shards last published (at most 50 ms old, summed over
//! shards, as [`crate::RunningSwitch::counters`] returns them) and encodes them with
//! `prometheus-client`, the Prometheus project's own Rust crate. The endpoint runs on a
//! thread of its own with a small blocking HTTP server (`tiny_http`): it never touches the
//! data path, which publishes its counters whether anyone scrapes or not.
//!
//! Metric names: `switchml_<counter>_total` for the switch-wide counters
//! ([`DaemonCounters::COUNTERS`]), `switchml_dropped_total{reason=…}` for drops by reason,
//! `switchml_job_<counter>_total{job=…}` per job, `switchml_cpu_seconds_total` for the
//! daemon threads' CPU time.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use switchml_core::switch::{DropReason, JobCounters};

use crate::traffic::{DaemonCounters, JobTraffic};

/// Where a scrape gets the counters from.
pub type Snapshot = dyn Fn() -> DaemonCounters + Send + Sync;

/// What a scrape answers: the whole OpenMetrics text (another switch's counters, e.g.
/// the p4app dialect's `Stats::openmetrics`).
pub type Render = dyn Fn() -> String + Send + Sync;

/// How often the endpoint's thread looks at its stop flag while idle.
const POLL: Duration = Duration::from_millis(100);

/// A running metrics endpoint; stops when dropped.
pub struct MetricsEndpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsEndpoint {
    /// Listen at `addr` (port 0: any) and serve `snapshot()`'s counters at `/metrics`.
    pub fn start(addr: SocketAddr, snapshot: Box<Snapshot>) -> io::Result<MetricsEndpoint> {
        MetricsEndpoint::serve_text(addr, Box::new(move || encode(&snapshot())))
    }

    /// Listen at `addr` (port 0: any) and answer each scrape of `/metrics` with `render()`.
    pub fn serve_text(addr: SocketAddr, render: Box<Render>) -> io::Result<MetricsEndpoint> {
        let server = tiny_http::Server::http(addr).map_err(|e| {
            io::Error::new(io::ErrorKind::AddrInUse, format!("metrics at {addr}: {e}"))
        })?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| io::Error::other("metrics: not an IP listener"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("switchml-metrics".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || serve(&server, &*render, &stop)
            })?;
        log::info!("metrics at http://{addr}/metrics");
        Ok(MetricsEndpoint {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Return the address it listens at.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(server: &tiny_http::Server, render: &Render, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let request = match server.recv_timeout(POLL) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                log::warn!("metrics: {e}");
                continue;
            }
        };
        let path = request.url().split('?').next().unwrap_or("");
        let response = if path == "/metrics" {
            let text = render();
            let kind = "application/openmetrics-text; version=1.0.0; charset=utf-8";
            tiny_http::Response::from_string(text).with_header(
                tiny_http::Header::from_bytes("Content-Type", kind).expect("a valid header"),
            )
        } else {
            tiny_http::Response::from_string("not found: the metrics are at /metrics\n")
                .with_status_code(404)
        };
        if let Err(e) = request.respond(response) {
            log::debug!("metrics: answering a scrape: {e}");
        }
    }
}

/// Return `counters` in the OpenMetrics text format.
pub fn encode(counters: &DaemonCounters) -> String {
    let mut registry = Registry::with_prefix("switchml");
    registry.register_collector(Box::new(Counters(counters.clone())));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .expect("writing to a String cannot fail");
    text
}

/// One scrape's counters.
#[derive(Debug)]
struct Counters(DaemonCounters);

impl Collector for Counters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let c = &self.0;
        for ((name, value), (_, help)) in c.named().zip(DaemonCounters::COUNTERS) {
            counter(&mut encoder, name, help, value)?;
        }
        let cpu = ConstCounter::new(c.cpu.as_secs_f64());
        let help = "CPU time (user + system) of the daemon's threads";
        cpu.encode(encoder.encode_descriptor("cpu_seconds", help, None, MetricType::Counter)?)?;
        {
            let help = "Datagrams dropped, by reason (protocol.md §3.8)";
            let mut family =
                encoder.encode_descriptor("dropped", help, None, MetricType::Counter)?;
            for reason in DropReason::ALL {
                let labels = [("reason", reason.name())];
                ConstCounter::new(c.switch.drops(reason)).encode(family.encode_family(&labels)?)?;
            }
        }
        // One family per job counter, a sample per job: each job's values read once.
        let jobs: Vec<(String, Vec<u64>)> = c
            .jobs
            .iter()
            .map(|j| (j.job.to_string(), j.named().map(|(_, v)| v).collect()))
            .collect();
        let described = JobTraffic::DAEMON_COUNTERS
            .into_iter()
            .chain(JobCounters::NAMES.into_iter().zip(JOB_COUNTER_HELP));
        for (i, (name, help)) in described.enumerate() {
            let name = format!("job_{name}");
            let mut family = encoder.encode_descriptor(&name, help, None, MetricType::Counter)?;
            for (job, values) in &jobs {
                let labels = [("job", job.as_str())];
                let value = values.get(i).copied().unwrap_or(0);
                ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), std::fmt::Error> {
    let metric = ConstCounter::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, MetricType::Counter)?)
}

/// Help for the switch's per-job counters, in the order of [`JobCounters::NAMES`].
const JOB_COUNTER_HELP: [&str; JobCounters::COUNT] = [
    "Contributions added into a slot",
    "Uses completed (results multicast)",
    "Stored results sent again",
    "Duplicate contributions to an incomplete use, dropped",
    "Contributions for a use older than the one held, dropped",
    "Other contributions of this job dropped",
    "Joins answered",
    "Probes answered",
    "Aborts passed on to the job",
    "Uses that ended with an int32 overflow",
    "Runs (sessions) opened",
    "Messages refused for a wrong key or session",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_appears_with_its_value_and_labels() {
        let mut c = DaemonCounters {
            received: 11,
            status_off: 3,
            cpu: Duration::from_millis(1500),
            ..DaemonCounters::default()
        };
        c.switch.dropped[DropReason::Stale as usize] = 5;
        let mut job = JobTraffic {
            job: 7,
            multicasts: 9,
            ..JobTraffic::default()
        };
        job.switch.unauthorized = 4;
        c.jobs.push(job);
        let text = encode(&c);
        for line in [
            "switchml_received_total 11",
            "switchml_status_off_total 3",
            "switchml_cpu_seconds_total 1.5",
            "switchml_dropped_total{reason=\"stale\"} 5",
            "switchml_dropped_total{reason=\"malformed\"} 0",
            "switchml_job_multicasts_total{job=\"7\"} 9",
            "switchml_job_unauthorized_total{job=\"7\"} 4",
            "switchml_job_contributions_total{job=\"7\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} missing:\n{text}");
        }
        let names = DaemonCounters::COUNTERS.len() + 2 + 6 + JobCounters::COUNT;
        let types = text.lines().filter(|l| l.starts_with("# TYPE")).count();
        assert_eq!(types, names, "{text}");
    }
}
