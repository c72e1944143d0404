//! `switchml switch --dialect p4app`: serve the original SwitchML's client
//! (switchml-p4app-switch) until SIGINT or SIGTERM, then print every counter.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;
use switchml_p4app_switch::{P4appSwitchConfig, RunningP4appSwitch, Stats};

/// The protocol `switchml switch` serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Dialect {
    /// Ours (docs/protocol.md).
    Switchml,
    /// The original SwitchML's (docs/protocol.md §8, docs/p4app.md).
    P4app,
}

/// Every counter with its name, the drops saying why.
fn counters(s: &Stats) -> Vec<(&'static str, u64, &'static str)> {
    let (f, w) = (s.frames, s.switch);
    vec![
        ("received", f.received, "frames received"),
        ("sent", f.sent, "frames sent"),
        (
            "arp_replies",
            f.arp_replies,
            "ARP requests for the switch's IP answered",
        ),
        (
            "multicast",
            w.multicast,
            "sets completed, the result sent to every worker",
        ),
        (
            "unicast",
            w.unicast,
            "stored results sent again to a retransmitter",
        ),
        (
            "consumed",
            w.consumed,
            "contributions taken without a reply",
        ),
        (
            "malformed_frame",
            f.malformed,
            "dropped: frames that do not parse",
        ),
        (
            "wrong_port",
            f.wrong_port,
            "dropped: UDP outside ports 0xBEE0-0xBEEF",
        ),
        (
            "unknown_sender",
            f.unknown_sender,
            "dropped: a (MAC, IP) no UdpSession registered",
        ),
        (
            "malformed",
            w.malformed,
            "dropped: a header that does not parse",
        ),
        (
            "size",
            w.size,
            "dropped: a size code other than 1 (64) or 3 (256)",
        ),
        (
            "too_large",
            w.too_large,
            "dropped: more values than a slot holds",
        ),
        (
            "unknown_rank",
            w.unknown_rank,
            "dropped: no session, or a rank beyond it",
        ),
        ("slot", w.slot, "dropped: a slot beyond the switch's"),
        (
            "incomplete",
            w.incomplete,
            "dropped: a retransmission into a set not yet complete",
        ),
        (
            "buffer_too_small",
            w.buffer_too_small,
            "dropped: no room for the reply",
        ),
        (
            "unregistered",
            f.unregistered,
            "not sent: a rank that has not registered",
        ),
        (
            "send_errors",
            f.send_errors,
            "not sent: the interface refused",
        ),
        (
            "other",
            f.other,
            "ignored: frames for other hosts or protocols",
        ),
    ]
}

fn print(s: &Stats, json_out: bool) {
    if json_out {
        let mut m = serde_json::Map::new();
        for (k, v, _) in counters(s) {
            m.insert(k.into(), v.into());
        }
        m.insert("workers".into(), s.workers.into());
        m.insert("registered".into(), s.registered.into());
        println!("{}", serde_json::Value::Object(m));
    } else {
        println!(
            "  session: {} workers, {} registered",
            s.workers, s.registered
        );
        for (k, v, why) in counters(s) {
            if v > 0 || !why.starts_with("dropped") {
                println!("  {k:>16} {v:>12}  {why}");
            }
        }
    }
    let _ = std::io::stdout().flush();
}

/// Run the dialect switch; return the exit code.
pub fn switch(
    iface: &str,
    ip: Ipv4Addr,
    control: SocketAddr,
    report_every: u64,
    json_out: bool,
) -> i32 {
    let stop = crate::signal::stop_flag();
    let mut config = P4appSwitchConfig::new(iface, ip);
    config.control = control;
    let sw = match RunningP4appSwitch::start(&config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: the p4app switch on {iface}: {e}");
            return 1;
        }
    };
    let mac = sw.mac().map(|b| format!("{b:02x}")).join(":");
    if json_out {
        println!(
            "{}",
            json!({"dialect": "p4app", "iface": iface, "mac": mac, "ip": ip.to_string(), "control": sw.control_addr().to_string(), "slots": config.slots})
        );
    } else {
        println!(
            "serving the p4app dialect on {iface} as {ip} ({mac}), UDP 48864; control plane (gRPC) on {}; {} slots",
            sw.control_addr(),
            config.slots
        );
    }
    let _ = std::io::stdout().flush();
    let mut last = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        if report_every > 0 && last.elapsed() >= Duration::from_secs(report_every) {
            last = Instant::now();
            print(&sw.stats(), json_out);
        }
    }
    let s = sw.stop();
    if !json_out {
        println!("stopped; final counters:");
    }
    print(&s, json_out);
    0
}
