//! `switchml doctor`: ask a switch what it knows, so that a stuck job is never a mystery.
//!
//! It sends Status requests (protocol.md §3.7), which change nothing at the switch, and
//! reports whether the switch answers at all (and if not, whether the port is closed or the
//! packets vanish), the round-trip time, the switch's epoch, and for the job: its world
//! size, which ranks joined and which are missing, and its counters.
//!
//! A sharded switch (protocol.md §1.1) says how many shards it has: each is asked in turn,
//! at the next ports, and the counters are added up over all of them (who joined is shard
//! 0's view: every rank's lane 0 is there).
//!
//! The switch cannot know that ranks fell back to their host ring (issue 14; no message
//! says so), but it sees the signs, and the doctor spells them out ([`fallback_hint`]): a
//! job it refuses, and Aborts in the job's runs.
//!
//! A P4 switch answers the same Status, but its StatusReply's counters are zeros (its data
//! plane cannot read them). With `--bmv2-cli 'simple_switch_CLI --thrift-port 9090'` the
//! doctor reads them through BMv2's control plane instead ([`bmv2`]) and prints them under
//! the same names.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchml_core::ranks::WorldSet;
use switchml_core::switch::JobCounters;
use switchml_core::wire::{
    probe, status, AbortReason, Message, ProbeFlags, ProbePacket, ProbeRepr, StatusFlags,
    StatusPacket, StatusRepr,
};

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
        /// The switch's number of shards (1 when not sharded).
        shards: u16,
    },
    Abort(String, u32),
}

/// What the data plane answered, and what the control plane read.
struct Findings<'a> {
    rtts: &'a [Duration],
    answer: Option<&'a Answer>,
    refused: bool,
    /// Counters read through the control plane (`--bmv2-cli`), or why they could not be.
    control: Option<Result<Vec<(&'static str, u64)>, String>>,
    /// Shards of a sharded switch that did not answer.
    silent: &'a [u16],
}

/// Run the doctor; return 0 if the switch answered and knows the job (and, with
/// `bmv2_cli`, its counters could be read).
pub fn doctor(
    switch: &str,
    job: u16,
    key: u64,
    probes: u32,
    json_out: bool,
    bmv2_cli: Option<&str>,
) -> i32 {
    let addr = match switchml_worker::config::resolve("--switch", switch) {
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
    let mut asker = Asker::new(job, key);
    for _ in 0..probes.max(1) {
        let mut sent = Instant::now();
        let mut cookies = 0;
        if let Err(e) = socket.send(&asker.request()) {
            refused |= e.kind() == std::io::ErrorKind::ConnectionRefused;
            continue;
        }
        while sent.elapsed() < ANSWER_WAIT {
            match socket.recv(&mut buf) {
                Ok(n) => {
                    // A Cookie first (protocol.md §4.2): ask again with it, and time that.
                    if cookies < 2 && asker.take_cookie(&buf[..n]) {
                        cookies += 1;
                        sent = Instant::now();
                        if socket.send(&asker.request()).is_err() {
                            break;
                        }
                        continue;
                    }
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
    // The switch answers a Status only to the job's key (protocol.md §3.7). Silence may be
    // an unknown job or another key: a Probe of no run tells them apart (it is answered by
    // any switch, with a 20-byte Abort: UnknownJob, or SessionEnded for a job it has).
    if answer.is_none() && !refused {
        answer = probe_job(&socket, job, &mut buf);
    }
    let silent = match &mut answer {
        Some(Answer::Status {
            shards, counters, ..
        }) => add_other_shards(addr, job, key, *shards, counters),
        _ => Vec::new(),
    };
    let control = bmv2_cli.map(|cli| bmv2::read_counters(cli, job).map(|c| counter_list(&c)));
    let findings = Findings {
        rtts: &rtts,
        answer: answer.as_ref(),
        refused,
        control,
        silent: &silent,
    };
    print_report(addr, job, probes, &findings, json_out)
}

/// Ask shards 1.. of a switch of `shards` at `addr` (shard 0) about `job` and add their
/// counters to `counters`; return the shards that did not answer.
fn add_other_shards(
    addr: SocketAddr,
    job: u16,
    key: u64,
    shards: u16,
    counters: &mut [(&'static str, u64)],
) -> Vec<u16> {
    let mut silent = Vec::new();
    for shard in 1..shards {
        let port = switchml_core::shard::shard_port(addr.port(), shard);
        let mut at = addr;
        let answer = port.and_then(|p| {
            at.set_port(p);
            ask(&open(at).ok()?, job, key)
        });
        match answer {
            Some(Answer::Status { counters: c, .. }) => {
                for ((_, total), (_, n)) in counters.iter_mut().zip(c) {
                    *total += n;
                }
            }
            _ => silent.push(shard),
        }
    }
    silent
}

/// One Status to `socket` about `job` (again with the switch's Cookie if one comes); its
/// answer, if one comes in time.
fn ask(socket: &UdpSocket, job: u16, key: u64) -> Option<Answer> {
    let mut asker = Asker::new(job, key);
    socket.send(&asker.request()).ok()?;
    let sent = Instant::now();
    let mut buf = [0u8; 2048];
    while sent.elapsed() < ANSWER_WAIT {
        let n = socket.recv(&mut buf).ok()?;
        if asker.take_cookie(&buf[..n]) {
            socket.send(&asker.request()).ok()?;
            continue;
        }
        if let Some(a) = parse(&buf[..n], job) {
            return Some(a);
        }
    }
    None
}

/// One Probe of job `job` naming no run; the Abort that answers it, read as an answer about
/// the job.
fn probe_job(socket: &UdpSocket, job: u16, buf: &mut [u8]) -> Option<Answer> {
    let probe = ProbeRepr {
        job,
        rank: 0,
        slot: 0,
        ver: 0,
        seq: 0,
        session: 0x5EED_D0C5,
        flags: ProbeFlags::NONE,
    };
    let mut out = [0u8; probe::LEN];
    probe.emit(&mut ProbePacket::new_unchecked(&mut out[..]));
    socket.send(&out).ok()?;
    let sent = Instant::now();
    while sent.elapsed() < ANSWER_WAIT {
        let n = socket.recv(buf).ok()?;
        match Message::parse(&buf[..n]) {
            Ok(Message::Abort(a)) if a.job == job && a.reason == AbortReason::SessionEnded => {
                return Some(Answer::Abort(
                    "it has the job but did not answer a Status signed with SWITCHML_JOB_KEY: \
                     set the job's key"
                        .into(),
                    a.epoch,
                ));
            }
            Ok(_) => {
                if let Some(a) = parse(&buf[..n], job) {
                    return Some(a);
                }
            }
            Err(_) => {}
        }
    }
    None
}

/// A keyed Status and the switch's cookie for this socket (protocol.md §3.7, §4.2).
struct Asker {
    job: u16,
    key: u64,
    nonce: u32,
    cookie: u64,
}

impl Asker {
    fn new(job: u16, key: u64) -> Self {
        // Any non-zero value that differs between runs names this asker's Cookies.
        let nonce = (std::process::id() ^ 0x5EED_0000).max(1);
        Asker {
            job,
            key,
            nonce,
            cookie: 0,
        }
    }

    fn request(&self) -> [u8; status::LEN] {
        let req = StatusRepr {
            job: self.job,
            rank: 0,
            nonce: self.nonce,
            cookie: self.cookie,
            tag: [0; 16],
        }
        .sign(self.key);
        let mut out = [0u8; status::LEN];
        req.emit(&mut StatusPacket::new_unchecked(&mut out[..]));
        out
    }

    /// Keep the cookie if `bytes` is a Cookie answering this asker; say whether it was.
    fn take_cookie(&mut self, bytes: &[u8]) -> bool {
        match Message::parse(bytes) {
            Ok(Message::Cookie(c)) if c.job == self.job && c.nonce == self.nonce => {
                self.cookie = c.cookie;
                true
            }
            _ => false,
        }
    }
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
            shards: u16::from(r.shards).max(1),
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
    ];
    list.extend(JobCounters::from(c).named());
    // Every drop class the switch counts, its adapter's included (bad sources, oversized).
    let classes = switchml_core::switch::DropReason::ALL.iter().zip(c.drops);
    list.extend(classes.map(|(r, n)| (r.name(), n)));
    list
}

fn print_report(addr: SocketAddr, job: u16, probes: u32, f: &Findings, json_out: bool) -> i32 {
    let (rtts, answer, refused) = (f.rtts, f.answer, f.refused);
    let control = f.control.as_ref();
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
    let fallback = fallback_hint(answer, control);
    let ok = matches!(answer, Some(Answer::Status { .. }))
        && !matches!(control, Some(Err(_)))
        && f.silent.is_empty();
    // A StatusReply whose counters are all zero is a P4 switch's: the reference counts at
    // least the Status itself.
    let p4_zeros = matches!(answer, Some(Answer::Status { counters, .. })
        if counters.iter().all(|&(_, n)| n == 0));
    let note = (p4_zeros && control.is_none()).then_some(
        "the counters are all zero: a P4 switch cannot put them in a StatusReply; on BMv2 read them with --bmv2-cli 'simple_switch_CLI --thrift-port PORT'",
    );
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
                shards,
            }) => {
                v["shards"] = json!(shards);
                v["silent_shards"] = json!(f.silent);
                v["epoch"] = json!(epoch);
                v["world"] = json!(world);
                v["slots"] = json!(slot_count);
                v["all_joined"] = json!(all_joined);
                v["joined"] = json!(joined.iter().collect::<Vec<_>>());
                v["missing"] = json!(joined.complement_within(*world).iter().collect::<Vec<_>>());
                v["counters"] = counter_map(counters);
                v["counters_source"] = json!("status_reply");
            }
            Some(Answer::Abort(reason, epoch)) => {
                v["epoch"] = json!(epoch);
                v["refused"] = json!(reason);
            }
            None => {}
        }
        match control {
            Some(Ok(counters)) => {
                v["counters"] = counter_map(counters);
                v["counters_source"] = json!("bmv2_cli");
            }
            Some(Err(e)) => v["control_error"] = json!(e),
            None => {}
        }
        if let Some(note) = note {
            v["note"] = json!(note);
        }
        if let Some(hint) = &fallback {
            v["fallback"] = json!(hint);
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
                shards,
                ..
            }) => {
                println!("  epoch {epoch:#010x}; job {job}: {world} ranks, {slot_count} slots");
                if *shards > 1 {
                    let silent = match f.silent {
                        [] => String::new(),
                        s => format!("; NO answer from shards {s:?}"),
                    };
                    println!("  shards: {shards} (counters added up over every shard{silent})");
                }
                println!(
                    "  joined: [{joined}]  missing: [{}]",
                    joined.complement_within(*world)
                );
                if control.is_none() {
                    println!("  counters: {}", counter_line(counters));
                }
            }
            Some(Answer::Abort(_, epoch)) => println!("  epoch {epoch:#010x}"),
            None => {}
        }
        match control {
            Some(Ok(counters)) => println!(
                "  counters (read by simple_switch_CLI): {}",
                counter_line(counters)
            ),
            Some(Err(e)) => println!("  counters: NOT read from the control plane: {e}"),
            None => {}
        }
        println!("  diagnosis: {diagnosis}");
        if let Some(hint) = &fallback {
            println!("  fallback: {hint}");
        }
        if let Some(note) = note {
            println!("  note: {note}");
        }
    }
    i32::from(!ok)
}

/// What the switch's view says about ranks falling back to their host ring: it refuses the
/// job, or the job's runs saw Aborts (a rank gave up mid-run: a stall, a restart).
fn fallback_hint(
    answer: Option<&Answer>,
    control: Option<&Result<Vec<(&'static str, u64)>, String>>,
) -> Option<String> {
    const HOW: &str = "ranks started with a fallback address (SWITCHML_FALLBACK_ADDR) \
                       all-reduce over a TCP ring among themselves instead; their stats \
                       say so (fallbacks, fallback_tensors)";
    let counters = match (control, answer) {
        (Some(Ok(c)), _) => c.as_slice(),
        (_, Some(Answer::Status { counters, .. })) => counters.as_slice(),
        (_, Some(Answer::Abort(..))) => return Some(format!("the switch refuses the job: {HOW}")),
        _ => return None,
    };
    let aborts = counters
        .iter()
        .find(|(k, _)| *k == "aborts")
        .map_or(0, |c| c.1);
    (aborts > 0).then(|| {
        format!("{aborts} Aborts passed on in this job's runs (a rank gave up mid-run): {HOW}")
    })
}

fn counter_line(counters: &[(&str, u64)]) -> String {
    let line: Vec<String> = counters.iter().map(|(k, n)| format!("{k} {n}")).collect();
    line.join(", ")
}

fn counter_map(counters: &[(&str, u64)]) -> Value {
    let c: serde_json::Map<String, Value> = counters
        .iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    Value::Object(c)
}

fn report_error(json_out: bool, e: &str) -> i32 {
    if json_out {
        println!("{}", json!({"reachable": false, "error": e}));
    } else {
        eprintln!("error: {e}");
    }
    2
}

/// Reading a BMv2 switch's counters through its control plane, `simple_switch_CLI`.
///
/// A P4 data plane cannot read its `counter`s, so a StatusReply from the v1model program
/// carries zeros (p4/README.md, "Status"); the Thrift CLI that comes with `simple_switch`
/// can. The names are those of `p4/v1model/drop_counters.p4` and `job_counters.p4`, given
/// as bare names, which the CLI resolves as unique suffixes of the full names
/// (`SwitchmlIngress.drop_counters.received`). The job's counters are read at its job table
/// entry, found with `table_dump_entry_from_key job_table JOB`.
mod bmv2 {
    use std::collections::HashMap;
    use std::io::Write;
    use std::process::{Command, Stdio};

    use switchml_core::switch::{DropReason, JobCounters};
    use switchml_core::wire::StatusCounters;

    /// The switch-wide counter of datagrams received (one cell).
    pub const RECEIVED: &str = "received";
    /// The switch-wide drops, one cell per class of `DropReason::ALL`.
    pub const DROPS: &str = "drops";
    /// The per-job counters, in StatusReply order (`job_counters.p4`): the model's names.
    pub use switchml_p4model::job_counters::NAMES as JOB_COUNTERS;
    /// `set_job`'s parameter that is the job table entry (`classifier.p4`: world, slot_lo,
    /// slot_count, group, job_index, …).
    pub const JOB_INDEX_PARAM: usize = 4;

    /// Run `cli` (a shell command line) with `commands` on its stdin; return its stdout.
    pub fn run(cli: &str, commands: &str) -> Result<String, String> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(cli)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run `{cli}`: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(commands.as_bytes())
                .map_err(|e| format!("`{cli}`: {e}"))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("`{cli}`: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some(line) = refusal(&stdout) {
            return Err(format!("`{cli}`: {line}"));
        }
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(format!(
                "`{cli}` failed ({}): {}",
                out.status,
                stderr.trim()
            ));
        }
        Ok(stdout)
    }

    /// Strip the CLI's prompts (`RuntimeCmd: `, once per command read) from a line.
    fn unprompted(line: &str) -> &str {
        let mut l = line.trim();
        while let Some(rest) = l.strip_prefix("RuntimeCmd:") {
            l = rest.trim_start();
        }
        l
    }

    /// The first line saying the CLI could not do what it was asked, if any.
    pub fn refusal(output: &str) -> Option<&str> {
        output.lines().map(unprompted).find(|l| {
            ["Error", "Invalid", "Could not connect"]
                .iter()
                .any(|p| l.starts_with(p))
        })
    }

    /// The values in `counter_read` and `register_read` answers, by (name, index): a
    /// counter's packets (`name[i]= (B bytes, P packets)`, or before BMv2 1.15
    /// `name[i]=  BmCounterValue(packets=P, bytes=B)`), a register's value (`name[i]= V`).
    pub fn reads(output: &str) -> HashMap<(String, u32), u64> {
        output
            .lines()
            .map(unprompted)
            .filter_map(|l| {
                let (cell, value) = l.split_once("]=")?;
                let (name, index) = cell.split_once('[')?;
                Some(((name.to_string(), index.parse().ok()?), value_of(value)?))
            })
            .collect()
    }

    fn value_of(text: &str) -> Option<u64> {
        let text = text.trim();
        let number = |s: &str| s.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok();
        if let Some(rest) = text.split_once("packets=") {
            return number(rest.1.split(',').next()?);
        }
        if let Some((before, _)) = text.split_once(" packets") {
            return number(before.rsplit(' ').next()?);
        }
        text.parse().ok()
    }

    /// The job table entry of `job` in a `table_dump_entry_from_key` answer.
    pub fn job_index(output: &str, job: u16) -> Result<u32, String> {
        let entry = output
            .lines()
            .map(unprompted)
            .find_map(|l| l.strip_prefix("Action entry:"))
            .ok_or_else(|| format!("job {job} has no job_table entry on the switch"))?;
        let params = entry
            .split_once(" - ")
            .map_or("", |(_, p)| p)
            .split(',')
            .map(str::trim)
            .collect::<Vec<_>>();
        params
            .get(JOB_INDEX_PARAM)
            .and_then(|p| u32::from_str_radix(p, 16).ok())
            .ok_or_else(|| format!("job {job}: no job_index in `{entry}`"))
    }

    /// The commands that read every counter a StatusReply carries for job table entry `index`.
    pub fn counter_commands(index: u32) -> String {
        let mut c = format!("counter_read {RECEIVED} 0\n");
        for i in 0..DropReason::ALL.len() {
            c += &format!("counter_read {DROPS} {i}\n");
        }
        for name in JOB_COUNTERS {
            c += &format!("counter_read {name} {index}\n");
        }
        c
    }

    /// The StatusReply's counters from the reads of [`counter_commands`].
    pub fn counters(
        reads: &HashMap<(String, u32), u64>,
        index: u32,
    ) -> Result<StatusCounters, String> {
        let read = |name: &str, i: u32| {
            reads
                .get(&(name.to_string(), i))
                .copied()
                .ok_or_else(|| format!("no answer to `counter_read {name} {i}`"))
        };
        let mut drops = [0u64; DropReason::ALL.len()];
        for (i, d) in drops.iter_mut().enumerate() {
            *d = read(DROPS, i as u32)?;
        }
        let mut job = [0u64; JobCounters::COUNT];
        for (value, name) in job.iter_mut().zip(JOB_COUNTERS) {
            *value = read(name, index)?;
        }
        Ok(JobCounters::from_array(job).status(read(RECEIVED, 0)?, drops))
    }

    /// Read job `job`'s StatusReply counters from the switch that `cli` controls.
    pub fn read_counters(cli: &str, job: u16) -> Result<StatusCounters, String> {
        let dump = run(cli, &format!("table_dump_entry_from_key job_table {job}\n"))?;
        let index = job_index(&dump, job)?;
        let out = run(cli, &counter_commands(index))?;
        counters(&reads(&out), index)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// simple_switch_CLI's answers as they appear on its stdout, commands piped in.
        const DUMP: &str = "Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation\nRuntimeCmd: Dumping entry 0x1\nMatch key:\n* prefix.job           : EXACT     0009\nAction entry: SwitchmlIngress.classifier.set_job - 02, 22, 04, 03, 02, 03, 0123456789abcdef\nRuntimeCmd: \n";

        /// The names read are the programs': a rename there must show up here.
        #[test]
        fn the_names_are_the_v1model_programs() {
            let drop_p4 = include_str!("../../../p4/v1model/drop_counters.p4");
            let job_p4 = include_str!("../../../p4/v1model/job_counters.p4");
            let declared = |p4: &str, name: &str| {
                p4.lines().any(|l| {
                    l.trim_start().starts_with("counter(")
                        && l.split(';')
                            .next()
                            .is_some_and(|d| d.ends_with(&format!(" {name}")))
                })
            };
            assert!(declared(drop_p4, RECEIVED) && declared(drop_p4, DROPS));
            for name in JOB_COUNTERS {
                assert!(
                    declared(job_p4, name),
                    "{name} is not a counter of job_counters.p4"
                );
            }
            let classifier = include_str!("../../../p4/include/classifier.p4");
            let params = classifier
                .split_once("action set_job(")
                .and_then(|(_, rest)| rest.split_once(')'))
                .map(|(params, _)| params.split(',').map(str::trim).collect::<Vec<_>>())
                .expect("classifier.p4 has set_job");
            assert!(
                params[JOB_INDEX_PARAM].ends_with(" job_index"),
                "{params:?}"
            );
        }

        #[test]
        fn both_counter_formats_and_registers_are_read() {
            let out = "RuntimeCmd: drops[3]= (540 bytes, 9 packets)\n\
                       RuntimeCmd: RuntimeCmd: job_joins[2]=  BmCounterValue(packets=4, bytes=240)\n\
                       RuntimeCmd: session[2]= 286331153\n\
                       RuntimeCmd: \n";
            let r = reads(out);
            assert_eq!(r[&("drops".to_string(), 3)], 9);
            assert_eq!(r[&("job_joins".to_string(), 2)], 4);
            assert_eq!(r[&("session".to_string(), 2)], 286_331_153);
            assert_eq!(r.len(), 3);
        }

        #[test]
        fn the_job_index_is_set_jobs_fifth_parameter() {
            assert_eq!(job_index(DUMP, 9), Ok(2));
            let missing = "RuntimeCmd: Invalid table operation (BAD_MATCH_KEY)\n";
            assert!(job_index(missing, 9)
                .unwrap_err()
                .contains("no job_table entry"));
        }

        #[test]
        fn refusals_are_found_behind_prompts() {
            assert_eq!(
                refusal("RuntimeCmd: Error: Invalid counter name (drop)\n"),
                Some("Error: Invalid counter name (drop)")
            );
            assert!(refusal("Could not connect to thrift client on port 9090\n").is_some());
            assert_eq!(refusal(DUMP), None);
        }

        #[test]
        fn counters_come_out_in_status_reply_order_with_dropped_summed() {
            let mut out = String::from("RuntimeCmd: received[0]= (0 bytes, 100 packets)\n");
            for i in 0..DropReason::ALL.len() {
                out += &format!("RuntimeCmd: drops[{i}]= (0 bytes, {i} packets)\n");
            }
            for (n, name) in JOB_COUNTERS.iter().enumerate() {
                out += &format!("RuntimeCmd: {name}[2]= (0 bytes, {} packets)\n", 10 + n);
            }
            let c = counters(&reads(&out), 2).unwrap();
            assert_eq!((c.received, c.dropped), (100, (0..15).sum()));
            assert_eq!((c.contributions, c.unauthorized), (10, 21));
            assert_eq!(c.drops[14], 14);
            let short = "RuntimeCmd: received[0]= (0 bytes, 1 packets)\n";
            assert!(counters(&reads(short), 2).unwrap_err().contains("drops 0"));
        }
    }
}
