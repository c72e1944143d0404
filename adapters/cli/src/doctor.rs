//! `switchml doctor`: ask a switch what it knows, so that a stuck job is never a mystery.
//!
//! It sends Status requests (protocol.md §3.7), which change nothing at the switch, and
//! reports whether the switch answers at all (and if not, whether the port is closed or the
//! packets vanish), the round-trip time, the switch's epoch, and for the job: its world
//! size, which ranks joined and which are missing, and its counters.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchml_core::ranks::WorldSet;
use switchml_core::wire::{Message, StatusFlags, StatusPacket, StatusRepr};

/// How long to wait for each answer.
const ANSWER_WAIT: Duration = Duration::from_millis(1000);

/// What the switch said.
enum Answer {
    Status {
        world: u16,
        slot_count: u16,
        epoch: u32,
        all_joined: bool,
        joined: WorldSet,
        counters: Vec<(&'static str, u64)>,
    },
    Abort(String, u32),
}

/// Run the doctor; return 0 if the switch answered and knows the job.
pub fn doctor(switch: &str, job: u16, probes: u32, json_out: bool) -> i32 {
    let addr = match switchml_udp::config::resolve("--switch", switch) {
        Ok(a) => a,
        Err(e) => return report_error(json_out, &e.to_string()),
    };
    let socket = match open(addr) {
        Ok(s) => s,
        Err(e) => {
            return report_error(
                json_out,
                &format!("cannot open a socket towards {addr}: {e}"),
            )
        }
    };
    let mut rtts = Vec::new();
    let mut answer = None;
    let mut refused = false;
    let mut buf = [0u8; 2048];
    for _ in 0..probes.max(1) {
        let req = StatusRepr { job, rank: 0 };
        let mut out = [0u8; 16];
        let len = req.buffer_len().min(out.len());
        req.emit(&mut StatusPacket::new_unchecked(&mut out[..len]));
        let sent = Instant::now();
        if let Err(e) = socket.send(&out[..len]) {
            refused |= e.kind() == std::io::ErrorKind::ConnectionRefused;
            continue;
        }
        while sent.elapsed() < ANSWER_WAIT {
            match socket.recv(&mut buf) {
                Ok(n) => {
                    if let Some(a) = parse(&buf[..n], job) {
                        rtts.push(sent.elapsed());
                        answer = Some(a);
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    refused = true;
                    break;
                }
                Err(_) => break, // the read timeout
            }
        }
    }
    print_report(addr, job, probes, &rtts, answer.as_ref(), refused, json_out)
}

fn open(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let local: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .expect("literal address");
    let s = UdpSocket::bind(local)?;
    s.connect(addr)?;
    s.set_read_timeout(Some(Duration::from_millis(100)))?;
    Ok(s)
}

fn parse(bytes: &[u8], job: u16) -> Option<Answer> {
    match Message::parse(bytes).ok()? {
        Message::StatusReply(r) if r.job == job => Some(Answer::Status {
            world: r.world,
            slot_count: r.slot_count,
            epoch: r.epoch,
            all_joined: r.flags.contains(StatusFlags::ALL_JOINED),
            joined: WorldSet::from_bitmap(r.joined),
            counters: counter_list(&r.counters),
        }),
        Message::Abort(a) if a.job == job => Some(Answer::Abort(
            format!("{} (detail {})", a.reason, a.detail),
            a.epoch,
        )),
        _ => None,
    }
}

fn counter_list(c: &switchml_core::wire::StatusCounters) -> Vec<(&'static str, u64)> {
    let mut list = vec![
        ("switch_received", c.received),
        ("switch_dropped", c.dropped),
        ("contributions", c.contributions),
        ("completions", c.completions),
        ("retransmit_replies", c.retransmit_replies),
        ("duplicates", c.duplicates),
        ("stale", c.stale),
        ("rejected", c.rejected),
        ("joins", c.joins),
        ("probes", c.probes),
        ("aborts", c.aborts),
        ("overflows", c.overflows),
        ("runs", c.runs),
        ("unauthorized", c.unauthorized),
    ];
    // Every drop class the switch counts, its adapter's included (bad sources, oversized).
    let classes = switchml_core::switch::DropReason::ALL.iter().zip(c.drops);
    list.extend(classes.map(|(r, n)| (r.name(), n)));
    list
}

fn print_report(
    addr: SocketAddr,
    job: u16,
    probes: u32,
    rtts: &[Duration],
    answer: Option<&Answer>,
    refused: bool,
    json_out: bool,
) -> i32 {
    let us = |d: &Duration| d.as_secs_f64() * 1e6;
    let rtt = (!rtts.is_empty()).then(|| {
        let min = rtts.iter().min().map_or(0.0, us);
        let max = rtts.iter().max().map_or(0.0, us);
        let avg = rtts.iter().map(us).sum::<f64>() / rtts.len() as f64;
        (min, avg, max)
    });
    let diagnosis = match answer {
        None if refused => format!("nothing listens at {addr}: the port is closed (ICMP port unreachable). Is `switchml switch` running there, on that port?"),
        None => format!("no answer from {addr} to {probes} requests in {:?} each: wrong address, a firewall dropping UDP, or no switch there", ANSWER_WAIT),
        Some(Answer::Abort(reason, _)) => format!("the switch answers but refuses job {job}: {reason}. Start it with `--job {job}:WORLD`"),
        Some(Answer::Status { all_joined: true, .. }) => "the switch knows the job and every rank has joined".into(),
        Some(Answer::Status { world, joined, .. }) => format!(
            "waiting for ranks {} to join (of {world})",
            joined.complement_within(*world)
        ),
    };
    let ok = matches!(answer, Some(Answer::Status { .. }));
    if json_out {
        let mut v = json!({
            "switch": addr.to_string(),
            "job": job,
            "reachable": answer.is_some(),
            "port_closed": refused && answer.is_none(),
            "answers": rtts.len(),
            "requests": probes,
            "rtt_us": rtt.map(|(min, avg, max)| json!({"min": min, "avg": avg, "max": max})),
            "diagnosis": diagnosis,
        });
        match answer {
            Some(Answer::Status {
                world,
                slot_count,
                epoch,
                all_joined,
                joined,
                counters,
            }) => {
                v["epoch"] = json!(epoch);
                v["world"] = json!(world);
                v["slots"] = json!(slot_count);
                v["all_joined"] = json!(all_joined);
                v["joined"] = json!(joined.iter().collect::<Vec<_>>());
                v["missing"] = json!(joined.complement_within(*world).iter().collect::<Vec<_>>());
                let c: serde_json::Map<String, Value> = counters
                    .iter()
                    .map(|(k, n)| (k.to_string(), json!(n)))
                    .collect();
                v["counters"] = Value::Object(c);
            }
            Some(Answer::Abort(reason, epoch)) => {
                v["epoch"] = json!(epoch);
                v["refused"] = json!(reason);
            }
            None => {}
        }
        println!("{v}");
    } else {
        println!("switch {addr}, job {job}");
        match rtt {
            Some((min, avg, max)) => println!(
                "  reachable: {} of {probes} requests answered, rtt min/avg/max {min:.0}/{avg:.0}/{max:.0} µs",
                rtts.len()
            ),
            None => println!("  NOT reachable"),
        }
        match answer {
            Some(Answer::Status {
                world,
                slot_count,
                epoch,
                joined,
                counters,
                ..
            }) => {
                println!("  epoch {epoch:#010x}; job {job}: {world} ranks, {slot_count} slots");
                println!(
                    "  joined: [{joined}]  missing: [{}]",
                    joined.complement_within(*world)
                );
                let line: Vec<String> = counters.iter().map(|(k, n)| format!("{k} {n}")).collect();
                println!("  counters: {}", line.join(", "));
            }
            Some(Answer::Abort(_, epoch)) => println!("  epoch {epoch:#010x}"),
            None => {}
        }
        println!("  diagnosis: {diagnosis}");
    }
    i32::from(!ok)
}

fn report_error(json_out: bool, e: &str) -> i32 {
    if json_out {
        println!("{}", json!({"reachable": false, "error": e}));
    } else {
        eprintln!("error: {e}");
    }
    2
}
