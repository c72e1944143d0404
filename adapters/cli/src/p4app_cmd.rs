//! `switchml switch --dialect p4app`: serve the original SwitchML's client
//! (switchml-p4app-switch) until SIGINT or SIGTERM, then print every counter; its
//! counters also at `--metrics` and through `--admin` (`stats`, `list`).

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use switchml_p4app_switch::{CounterKind, P4appSwitchConfig, RunningP4appSwitch, Stats};
use switchml_switchd::{AdminRequest, AdminSocket, MetricsEndpoint};

/// The protocol `switchml switch` serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Dialect {
    /// Ours (docs/protocol.md).
    Switchml,
    /// The original SwitchML's (docs/protocol.md §8, docs/p4app.md).
    P4app,
}

fn print(s: &Stats, json_out: bool) {
    if json_out {
        let mut m = serde_json::Map::new();
        for c in s.counters() {
            m.insert(c.name.into(), c.value.into());
        }
        m.insert("workers".into(), s.workers.into());
        m.insert("registered".into(), s.registered.into());
        println!("{}", serde_json::Value::Object(m));
    } else {
        println!(
            "  session: {} workers, {} registered",
            s.workers, s.registered
        );
        for c in s.counters() {
            if c.value > 0 || c.kind == CounterKind::Work {
                let kind = c.kind.prefix();
                println!("  {:>18} {:>12}  {kind}{}", c.name, c.value, c.help);
            }
        }
    }
    let _ = std::io::stdout().flush();
}

/// The admin socket's answer: `stats` the counters in the metrics' text, `list` the
/// session; jobs cannot be added or removed (the client's `UdpSession` makes the one
/// session).
fn answer(request: Result<AdminRequest, String>, s: &Stats) -> String {
    match request {
        Ok(AdminRequest::Stats) => format!("ok\n{}", s.openmetrics()),
        Ok(AdminRequest::List) => format!(
            "ok p4app session: {} workers, {} registered",
            s.workers, s.registered
        ),
        Ok(AdminRequest::Add(_) | AdminRequest::Remove(_) | AdminRequest::Share(..)) => {
            "error: the p4app dialect has one session, which the client's Session.UdpSession \
            opens; there are no jobs to add, remove or share"
                .into()
        }
        Err(e) => format!("error: {e}"),
    }
}

/// Where the dialect switch listens and reports, beside its interface.
pub struct Serving {
    /// The gRPC control plane's address.
    pub control: SocketAddr,
    /// Print the counters every this many seconds (0: only at the end).
    pub report_every: u64,
    /// Print JSON.
    pub json: bool,
    /// The admin socket (`stats`, `list`), if any.
    pub admin: Option<PathBuf>,
    /// The Prometheus endpoint, if any.
    pub metrics: Option<SocketAddr>,
    /// `--io xdp`: the dialect's frames through AF_XDP where the interface allows it.
    pub xdp: bool,
}

/// Run the dialect switch; return the exit code.
pub fn switch(iface: &str, ip: Ipv4Addr, serving: Serving) -> i32 {
    let Serving {
        control,
        report_every,
        json: json_out,
        admin,
        metrics,
        xdp,
    } = serving;
    let stop = crate::signal::stop_flag();
    let mut config = P4appSwitchConfig::new(iface, ip);
    config.control = control;
    config.xdp = xdp;
    let sw = match RunningP4appSwitch::start(&config) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("error: the p4app switch on {iface}: {e}");
            return 1;
        }
    };
    let admin = match admin.as_deref().map(AdminSocket::bind).transpose() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: the admin socket: {e}");
            return 1;
        }
    };
    let _metrics = match metrics {
        Some(at) => {
            let sw = Arc::clone(&sw);
            match MetricsEndpoint::serve_text(at, Box::new(move || sw.stats().openmetrics())) {
                Ok(m) => Some(m),
                Err(e) => {
                    eprintln!("error: {e}");
                    return 1;
                }
            }
        }
        None => None,
    };
    let mac = sw.mac().map(|b| format!("{b:02x}")).join(":");
    if json_out {
        println!(
            "{}",
            json!({"dialect": "p4app", "iface": iface, "mac": mac, "ip": ip.to_string(), "control": sw.control_addr().to_string(), "slots": config.slots, "af_xdp_queues": sw.xdp_queues()})
        );
    } else {
        let io = match sw.xdp_queues() {
            0 => "AF_PACKET".to_string(),
            n => format!("AF_XDP on {n} queue(s), AF_PACKET for the rest"),
        };
        println!(
            "serving the p4app dialect on {iface} as {ip} ({mac}), UDP 48864 through {io}; control plane (gRPC) on {}; {} slots",
            sw.control_addr(),
            config.slots
        );
    }
    let _ = std::io::stdout().flush();
    let mut last = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        if let Some(a) = &admin {
            a.serve(|request| answer(request, &sw.stats()));
        }
        if report_every > 0 && last.elapsed() >= Duration::from_secs(report_every) {
            last = Instant::now();
            print(&sw.stats(), json_out);
        }
    }
    drop(_metrics);
    let s = match Arc::try_unwrap(sw) {
        Ok(sw) => sw.stop(),
        Err(sw) => sw.stats(),
    };
    if !json_out {
        println!("stopped; final counters:");
    }
    print(&s, json_out);
    0
}
