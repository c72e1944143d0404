//! The `switchml` binary end to end, as separate processes on 127.0.0.1: a worker killed
//! mid-job makes the others fail quickly with an error naming its rank; `doctor` reports
//! who joined and why a job is refused; the demo verifies its result; the switch prints its
//! counters on SIGTERM. Every wait is bounded. The tests of the switch run on both
//! `--pipeline`s: the reference switch and the P4 model.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_switchml");

/// For each `fn NAME(pipeline: &str)` named, a test `reference::NAME` and a test
/// `p4_model::NAME` that run it with `switchml switch --pipeline` of that name.
macro_rules! on_both_pipelines {
    ($($name:ident),+ $(,)?) => {
        mod reference {
            $(#[test] fn $name() { super::$name("reference") })+
        }
        mod p4_model {
            $(#[test] fn $name() { super::$name("p4-model") })+
        }
    };
}

on_both_pipelines!(
    a_killed_worker_is_named_by_the_others_within_their_timeout,
    a_killed_worker_is_named_by_the_switch_with_the_default_settings,
    doctor_reports_joined_ranks_refusals_and_closed_ports,
    doctor_reports_every_drop_class_the_daemon_counts,
    the_switch_prints_its_counters_on_sigterm,
);

/// A child process whose stdout lines arrive on a channel.
struct Proc {
    child: Child,
    lines: Receiver<String>,
}

impl Proc {
    fn start(args: &[&str]) -> Proc {
        let child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start switchml");
        Proc::from_child(child)
    }

    /// Take a started child whose stdout and stderr are piped.
    fn from_child(mut child: Child) -> Proc {
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc { child, lines }
    }

    /// Wait for a stdout line containing `needle`.
    fn expect_line(&self, needle: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => {}
                Err(e) => panic!("no line with {needle:?} within {within:?}: {e}"),
            }
        }
    }

    /// Wait for the exit, at most `within` (then kill and fail); return (code, stderr).
    fn finish(mut self, within: Duration) -> (Option<i32>, String) {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                return (status.code(), err);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("process did not exit within {within:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start a switch of `pipeline` (`--pipeline`) on an ephemeral port; return it and its
/// address. Its jobs may have no key (`--allow-keyless`): these tests' workers send none.
fn switch(pipeline: &str, job: &str) -> (Proc, String) {
    let args = [
        "switch",
        "--bind",
        "127.0.0.1:0",
        "--allow-keyless",
        "--job",
        job,
    ];
    let p = Proc::start(&[&args[..], &["--pipeline", pipeline]].concat());
    let line = p.expect_line("listening on", Duration::from_secs(20));
    let addr = line.split_whitespace().nth(2).expect("address").to_string();
    (p, addr)
}

/// The largest `--count` a switch of `pipeline` takes (the P4 model: 256 values a packet).
fn largest_count(pipeline: &str) -> &'static str {
    match pipeline {
        "p4-model" => "256",
        _ => "1024",
    }
}

/// Before: `switchml switch --job 1:2` with no key served the job to anyone, with one log
/// line. Now it refuses to start and says how to give a key or say `none`.
#[test]
fn a_switch_refuses_a_job_without_a_key_unless_told() {
    let out = Command::new(BIN)
        .args(["switch", "--bind", "127.0.0.1:0", "--job", "1:2"])
        .env_remove("SWITCHML_JOB_KEY")
        .output()
        .expect("run switchml");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("job 1 has no key") && err.contains("--allow-keyless"),
        "{err}"
    );
    // Said explicitly, the job is served.
    let p = Proc::start(&["switch", "--bind", "127.0.0.1:0", "--job", "1:2:64:none"]);
    p.expect_line("listening on", Duration::from_secs(20));
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN).args(args).output().expect("run switchml");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Start ranks 0..3 of job 5 (3 ranks) with `tuning` added to their flags, kill rank 2
/// once it is running, and return ranks 0's and 1's exit codes and stderr, and how long
/// after the kill they had both exited.
fn kill_rank_2_of_3(pipeline: &str, tuning: &[&str]) -> (Vec<(Option<i32>, String)>, Duration) {
    let (sw, addr) = switch(pipeline, "5:3:64");
    let workers: Vec<Proc> = (0..3)
        .map(|r| {
            let rank = r.to_string();
            let mut args = vec![
                "worker",
                "--switch",
                &addr,
                "--job",
                "5",
                "--rank",
                &rank,
                "--world",
                "3",
                "--elements",
                "20k",
                "--iterations",
                "1000000",
                "--no-verify",
                "--window",
                "16",
                "--count",
                largest_count(pipeline),
            ];
            args.extend_from_slice(tuning);
            Proc::start(&args)
        })
        .collect();
    let mut workers = workers.into_iter();
    let (w0, w1, mut w2) = (
        workers.next().unwrap(),
        workers.next().unwrap(),
        workers.next().unwrap(),
    );
    w2.expect_line("iteration 2:", Duration::from_secs(30));
    w2.child.kill().expect("kill rank 2");
    let killed = Instant::now();
    let outcomes = [w0, w1]
        .into_iter()
        .map(|w| w.finish(Duration::from_secs(30)))
        .collect();
    let took = killed.elapsed();
    drop(sw);
    (outcomes, took)
}

fn a_killed_worker_is_named_by_the_others_within_their_timeout(pipeline: &str) {
    let (outcomes, _) = kill_rank_2_of_3(pipeline, &["--rto-ms", "2", "--retries", "10"]);
    for (rank, (code, err)) in outcomes.into_iter().enumerate() {
        assert_eq!(code, Some(1), "rank {rank} should fail: {err}");
        assert!(
            err.contains("rank 2") || err.contains("ranks 2"),
            "rank {rank}'s error does not name rank 2: {err}"
        );
    }
}

/// Issue 27: with the default timeouts a killed rank was named after 21 s, by the others'
/// stall detection. The switch stops hearing it and names it (Abort `RankSilent`,
/// protocol.md §4.3) within its dead interval, 1.5 s and a sweep; the bound here is
/// generous for a busy machine, the assertion is who names it.
fn a_killed_worker_is_named_by_the_switch_with_the_default_settings(pipeline: &str) {
    let (outcomes, took) = kill_rank_2_of_3(pipeline, &[]);
    for (rank, (code, err)) in outcomes.into_iter().enumerate() {
        assert_eq!(code, Some(1), "rank {rank} should fail: {err}");
        assert!(
            err.contains("rank 2 is gone"),
            "rank {rank}'s error is not the switch naming rank 2: {err}"
        );
    }
    assert!(took < Duration::from_secs(10), "named after {took:?}");
}

fn doctor_reports_joined_ranks_refusals_and_closed_ports(pipeline: &str) {
    let (sw, addr) = switch(pipeline, "5:2:32");
    let (code, out, _) = run(&[
        "doctor", "--switch", &addr, "--job", "5", "--probes", "2", "--json",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
    assert_eq!(v["reachable"], true);
    assert_eq!(v["world"], 2);
    assert_eq!(v["missing"], serde_json::json!([0, 1]));
    // One rank joins (and waits for the other): doctor sees it.
    let w = Proc::start(&[
        "worker",
        "--switch",
        &addr,
        "--job",
        "5",
        "--rank",
        "1",
        "--world",
        "2",
        "--join-timeout",
        "20",
        "--window",
        "16",
        "--count",
        largest_count(pipeline),
    ]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, out, _) = run(&[
            "doctor", "--switch", &addr, "--job", "5", "--probes", "1", "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
        if v["joined"] == serde_json::json!([1]) {
            assert_eq!(v["missing"], serde_json::json!([0]));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "rank 1 never showed as joined: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(w);
    let (code, out, _) = run(&["doctor", "--switch", &addr, "--job", "9", "--probes", "1"]);
    assert_eq!(code, Some(1));
    assert!(out.contains("refuses job 9"), "{out}");
    drop(sw);
    let closed = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let closed_addr = closed.local_addr().unwrap().to_string();
    drop(closed);
    let (code, out, _) = run(&[
        "doctor",
        "--switch",
        &closed_addr,
        "--probes",
        "1",
        "--json",
    ]);
    assert_eq!(code, Some(1));
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
    assert_eq!(v["reachable"], false);
}

/// Issue 10, defect 8: the Status reply, and so `doctor`, left out the drops the daemon
/// counted itself (datagrams too long for any message, forged sources).
fn doctor_reports_every_drop_class_the_daemon_counts(pipeline: &str) {
    let (sw, addr) = switch(pipeline, "5:2:32");
    let junk = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..3 {
        junk.send_to(&[0u8; 9000], &addr).unwrap();
    }
    junk.send_to(&[0xEE; 5], &addr).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, out, _) = run(&[
            "doctor", "--switch", &addr, "--job", "5", "--probes", "1", "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
        let c = &v["counters"];
        if c["oversized"] == 3 && c["malformed"] == 1 {
            for class in ["bad_source", "bad_session", "unknown_job", "stale"] {
                assert!(c[class].is_u64(), "doctor omits {class}: {c}");
            }
            assert!(c["switch_dropped"].as_u64() >= Some(4), "{c}");
            break;
        }
        assert!(Instant::now() < deadline, "drops never showed: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(sw);
}

/// A sharded switch (`--threads 3`): the doctor asks every shard and adds their counters up.
#[test]
fn doctor_adds_up_the_counters_of_every_shard() {
    let args = [
        "switch",
        "--bind",
        "127.0.0.1:0",
        "--job",
        "5:2:32",
        "--allow-keyless",
        "--threads",
        "3",
    ];
    let sw = Proc::start(&args);
    let line = sw.expect_line("listening on", Duration::from_secs(20));
    assert!(line.contains("3 shard(s)"), "{line}");
    let addr: std::net::SocketAddr = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    let junk = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for shard in [1u16, 2] {
        let mut at = addr;
        at.set_port(addr.port() + shard);
        for _ in 0..shard {
            junk.send_to(&[0u8; 9000], at).unwrap();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let a = addr.to_string();
        let (code, out, _) = run(&[
            "doctor", "--switch", &a, "--job", "5", "--probes", "1", "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
        assert_eq!(code, Some(0), "{v}");
        assert_eq!(
            (
                v["shards"].as_u64(),
                v["silent_shards"].as_array().map(Vec::len)
            ),
            (Some(3), Some(0))
        );
        // Three Status requests reached the switch: one per shard.
        if v["counters"]["oversized"] == 3 {
            assert!(v["counters"]["switch_received"].as_u64() >= Some(6), "{v}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the shards' drops never added up: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn demo_verifies_floats_and_integers_with_loss() {
    let (code, out, err) = run(&[
        "demo",
        "--workers",
        "3",
        "--elements",
        "40k",
        "--json",
        "--drop-rate",
        "0.02",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
    assert_eq!(v["verified"], true);
    assert!(v["retransmissions"].as_u64().unwrap() > 0);
    let (code, out, err) = run(&[
        "demo",
        "--workers",
        "2",
        "--elements",
        "30k",
        "--dtype",
        "i32",
        "--iterations",
        "2",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("verified: every rank's result matches"),
        "{out}"
    );
}

#[test]
fn demo_verifies_f16_and_bf16_sums_and_averages() {
    for dtype in ["f16", "bf16"] {
        for op in [None, Some("--average")] {
            let mut args = vec![
                "demo",
                "--workers",
                "3",
                "--elements",
                "20k",
                "--dtype",
                dtype,
                "--json",
            ];
            args.extend(op);
            let (code, out, err) = run(&args);
            assert_eq!(code, Some(0), "{dtype} {op:?}: {out}{err}");
            let v: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
            assert_eq!(v["verified"], true, "{v}");
            assert_eq!(v["dtype"], dtype, "{v}");
        }
    }
}

/// A packet trace (issue 26, item 6): `RUST_LOG=switchml::packet=trace` prints every
/// datagram a lane or the switch sends or receives as its message's `Display`.
#[test]
fn a_packet_trace_shows_each_datagram_as_its_message() {
    let out = Command::new(BIN)
        .args(["demo", "--workers", "2", "--elements", "300", "--json"])
        .env("RUST_LOG", "switchml::packet=trace")
        .output()
        .expect("run switchml");
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    for line in [
        "job 1 rank 0 lane 0 → switch: Join job 1 rank 0 world 2",
        "job 1 rank 1 lane 1 ← switch: JoinReply job 1",
        "→ switch: Contribution job 1 rank 1",
        "switch → job 1's lanes: Result job 1",
    ] {
        assert!(err.contains(line), "no {line:?} in the trace:\n{err}");
    }
    // Nothing else is on at that setting.
    assert!(err
        .lines()
        .all(|l| l.starts_with("[TRACE switchml::packet]")));
}

/// The lanes log through `log`: nothing by default, their joins when asked.
#[test]
fn lanes_are_quiet_by_default_and_log_their_joins_when_asked() {
    let demo = |rust_log: Option<&str>| {
        let mut cmd = Command::new(BIN);
        cmd.args(["demo", "--workers", "2", "--elements", "10k", "--json"]);
        match rust_log {
            Some(level) => cmd.env("RUST_LOG", level),
            None => cmd.env_remove("RUST_LOG"),
        };
        let out = cmd.output().expect("run switchml");
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let quiet = demo(None);
    assert!(quiet.trim().is_empty(), "{quiet}");
    let told = demo(Some("switchml_worker=info"));
    for rank in 0..2 {
        for lane in 0..2 {
            let line = format!("job 1 rank {rank} lane {lane}: joined");
            assert!(told.contains(&line), "no {line:?} in {told}");
        }
    }
    let debug = demo(Some("switchml_worker::lane_log=debug"));
    assert!(debug.contains("lane 1: left after 1 tensors"), "{debug}");
}

#[test]
fn a_worker_reports_its_timed_region_and_cpu_in_json() {
    let (sw, addr) = switch("reference", "3:2:32");
    let workers: Vec<_> = (0..2)
        .map(|r| {
            let rank = r.to_string();
            std::thread::spawn({
                let addr = addr.clone();
                move || {
                    run(&[
                        "worker",
                        "--switch",
                        &addr,
                        "--job",
                        "3",
                        "--rank",
                        &rank,
                        "--world",
                        "2",
                        "--elements",
                        "200k",
                        "--iterations",
                        "2",
                        "--window",
                        "16",
                        "--json",
                    ])
                }
            })
        })
        .collect();
    for w in workers {
        let (code, out, err) = w.join().expect("worker thread");
        assert_eq!(code, Some(0), "{out}{err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
        assert_eq!(v["verified"], true, "{v}");
        let (start, end) = (
            v["started_unix"].as_f64().expect("started_unix"),
            v["finished_unix"].as_f64().expect("finished_unix"),
        );
        let seconds = v["seconds"].as_f64().expect("seconds");
        assert!(start > 1.0e9 && end >= start, "{v}");
        // The region spans both iterations (and the copy between them).
        assert!(end - start + 0.01 >= seconds, "{v}");
        let cpu = v["cpu_seconds"].as_f64().expect("cpu_seconds");
        assert!(cpu > 0.0 && cpu < 60.0, "{v}");
        assert!(v["stale_results"].is_u64(), "{v}");
        // The lanes measured their round trips; the timeout is at least the 5 ms floor.
        assert!(v["srtt_ms"].as_f64().is_some_and(|t| t > 0.0), "{v}");
        assert!(v["rto_ms"].as_f64().is_some_and(|t| t >= 5.0), "{v}");
    }
    drop(sw);
}

/// SplitMix64's output function, as `switchml worker --help` writes it.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E3779B97F4A7C15);
    z = (z ^ z >> 30).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ z >> 27).wrapping_mul(0x94D049BB133111EB);
    z ^ z >> 31
}

/// Run `world` workers of job `job` at `addr` with `args`, each with `--output` to
/// `dir/rank<r>.<ext>`; return the files' bytes.
fn workers_with_output(
    addr: &str,
    job: &str,
    world: u16,
    args: &[&str],
    dir: &std::path::Path,
    ext: &str,
) -> Vec<Vec<u8>> {
    let handles: Vec<_> = (0..world)
        .map(|r| {
            let path = dir.join(format!("rank{r}.{ext}"));
            let mut argv: Vec<String> = [
                "worker",
                "--switch",
                addr,
                "--job",
                job,
                "--rank",
                &r.to_string(),
                "--world",
                &world.to_string(),
                "--window",
                "16",
                "--output",
                &path.display().to_string(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            argv.extend(args.iter().map(|s| s.to_string()));
            std::thread::spawn(move || {
                let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                let (code, out, err) = run(&argv);
                assert_eq!(code, Some(0), "{out}{err}");
                std::fs::read(&path).expect("the output file")
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("worker"))
        .collect()
}

/// `--output` writes the result, and the formula in `--help` gives the inputs: the sum
/// computed here from the help text alone matches the file.
#[test]
fn a_worker_writes_its_result_and_the_help_says_what_it_sums() {
    let (code, help, _) = run(&["worker", "--help"]);
    assert_eq!(code, Some(0));
    assert!(
        help.contains("u = mix(seed ^ (r << 48) ^ mix(i))"),
        "{help}"
    );
    assert!(
        help.contains("i32:  (u mod (2b + 1)) - b,  b = 2147483647 div WORLD"),
        "{help}"
    );
    assert!(help.contains("f32:  (u >> 40) / 2^23 - 1"), "{help}");
    let dir = std::env::temp_dir().join(format!("switchml-output-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (sw, addr) = switch("reference", "6:3:64");
    let (world, seed, n) = (3u16, 5u64, 5000usize);
    let input = |r: u16, i: usize| mix(seed ^ (u64::from(r) << 48) ^ mix(i as u64));
    // i32, raw little-endian: exact.
    let files = workers_with_output(
        &addr,
        "6",
        world,
        &["--elements", "5000", "--dtype", "i32", "--seed", "5"],
        &dir,
        "bin",
    );
    let b = 2147483647 / u64::from(world);
    for bytes in &files {
        assert_eq!(bytes.len(), 4 * n);
        for (i, v) in bytes.chunks_exact(4).enumerate() {
            let got = i32::from_le_bytes(v.try_into().unwrap());
            let want = (0..world).fold(0i32, |s, r| {
                s.wrapping_add((input(r, i) % (2 * b + 1)) as i64 as i32 - b as i32)
            });
            assert_eq!(got, want, "element {i}");
        }
    }
    // f32, .npy: within the bound for inputs in [-1, 1).
    let files = workers_with_output(
        &addr,
        "6",
        world,
        &["--elements", "5000", "--seed", "5"],
        &dir,
        "npy",
    );
    for bytes in &files {
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let header_len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
        assert!(
            header.contains("'descr': '<f4'") && header.contains("'shape': (5000,)"),
            "{header}"
        );
        let data = &bytes[10 + header_len..];
        assert_eq!(data.len(), 4 * n);
        for (i, v) in data.chunks_exact(4).enumerate() {
            let got = f64::from(f32::from_le_bytes(v.try_into().unwrap()));
            let want: f64 = (0..world)
                .map(|r| (input(r, i) >> 40) as f64 / 8_388_608.0 - 1.0)
                .sum();
            assert!((got - want).abs() < 1e-6, "element {i}: {got} vs {want}");
        }
    }
    drop(sw);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A flag beats the environment, which beats the TOML file, which beats the defaults; a
/// flag left out changes nothing.
#[test]
fn worker_settings_come_from_flags_then_environment_then_file_then_defaults() {
    let dir = std::env::temp_dir().join(format!("switchml-layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("worker.toml");
    std::fs::write(
        &file,
        "rank = 0\nworld_size = 1\njob = 8\nlanes = 1\nwindow = 8\ncount = 100\n",
    )
    .unwrap();
    let (sw, addr) = switch("reference", "8:1:64");
    let out = Command::new(BIN)
        .args([
            "worker",
            "--switch",
            &addr,
            "--count",
            "50",
            "--elements",
            "1000",
        ])
        .env("SWITCHML_CONFIG", &file)
        .env("SWITCHML_WINDOW", "16")
        .env_remove("RANK")
        .env_remove("SWITCHML_LANES")
        .env_remove("SWITCHML_COUNT")
        .output()
        .expect("run switchml");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("rank 0/1 joined job 8"), "{stdout}");
    assert!(
        stdout.contains("(epoch") && stdout.contains("1 lanes × 16 slots, 50 values/packet"),
        "{stdout}"
    );
    drop(sw);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn the_switch_prints_its_counters_on_sigterm(pipeline: &str) {
    let (sw, _) = switch(pipeline, "1:2");
    // SAFETY: sends SIGTERM to our own child, whose pid is live until we wait for it.
    unsafe { libc::kill(sw.child.id() as libc::pid_t, libc::SIGTERM) };
    sw.expect_line("final counters", Duration::from_secs(10));
    let (code, _) = sw.finish(Duration::from_secs(10));
    assert_eq!(code, Some(0));
}

/// Issue 14: workers of a job the switch does not know, given a fallback address, finish
/// over their host ring, verified, and say so loudly; `doctor` says what the ranks do.
#[test]
fn workers_the_switch_cannot_serve_fall_back_loudly_and_doctor_says_so() {
    let (sw, addr) = switch("reference", "5:2:32");
    let rendezvous = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    for dtype in ["f32", "i32"] {
        let workers: Vec<Proc> = (0..2)
            .map(|r| {
                let rank = r.to_string();
                Proc::start(&[
                    "worker",
                    "--switch",
                    &addr,
                    "--job",
                    "9",
                    "--rank",
                    &rank,
                    "--world",
                    "2",
                    "--elements",
                    "10k",
                    "--iterations",
                    "3",
                    "--dtype",
                    dtype,
                    "--fallback-addr",
                    &rendezvous,
                ])
            })
            .collect();
        for (rank, w) in workers.into_iter().enumerate() {
            let line = w.expect_line("FALLBACK", Duration::from_secs(30));
            assert!(line.contains("does not know this job"), "{line}");
            w.expect_line("verified", Duration::from_secs(30));
            let done = w.expect_line("FALLBACK", Duration::from_secs(30));
            assert!(done.contains("3 all-reduces"), "rank {rank}: {done}");
            let (code, err) = w.finish(Duration::from_secs(30));
            assert_eq!(code, Some(0), "rank {rank}: {err}");
            assert!(
                err.contains("FALLBACK to the host ring"),
                "rank {rank} logs it: {err}"
            );
        }
    }
    let (_, out, _) = run(&["doctor", "--switch", &addr, "--job", "9", "--probes", "1"]);
    assert!(
        out.contains("fallback: the switch refuses the job"),
        "{out}"
    );
    drop(sw);
}

/// Two levels as separate processes (docs/protocol.md §7): a parent, two children of two
/// ranks each, four workers that verify their sums; then the demo's `--children`.
#[test]
fn workers_sum_through_a_parent_and_two_child_switch_processes() {
    let parent = Proc::start(&[
        "switch",
        "--bind",
        "127.0.0.1:0",
        "--parent-job",
        "9:2:64:9a7e27",
    ]);
    let line = parent.expect_line("listening on", Duration::from_secs(20));
    let up = line.split_whitespace().nth(2).expect("address").to_string();
    parent.expect_line("a parent", Duration::from_secs(20));
    let children: Vec<(Proc, String)> = (0..2)
        .map(|m| {
            let spec = format!(
                "job=1,parent={up},parent-job=9,member={m},members=2,rank-lo={},world=4,\
                 parent-key=9a7e27",
                2 * m
            );
            let args = ["switch", "--bind", "127.0.0.1:0", "--job", "1:2:64:5ec2e7"];
            let p = Proc::start(&[&args[..], &["--child-of", &spec]].concat());
            let line = p.expect_line("listening on", Duration::from_secs(20));
            let addr = line.split_whitespace().nth(2).expect("address").to_string();
            p.expect_line("member", Duration::from_secs(20));
            (p, addr)
        })
        .collect();
    let workers: Vec<Proc> = (0..4)
        .map(|r: usize| {
            let mut cmd = Command::new(BIN);
            cmd.env("SWITCHML_JOB_KEY", "5ec2e7");
            let rank = r.to_string();
            let at = &children[r / 2].1;
            let args = ["worker", "--switch", at, "--job", "1", "--rank", &rank];
            let more = ["--world", "4", "--elements", "30k", "--window", "32"];
            let child = cmd
                .args(args)
                .args(more)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start a worker");
            Proc::from_child(child)
        })
        .collect();
    for (rank, w) in workers.into_iter().enumerate() {
        w.expect_line("verified", Duration::from_secs(30));
        let (code, err) = w.finish(Duration::from_secs(10));
        assert_eq!(code, Some(0), "rank {rank}: {err}");
    }
    let (code, out, err) = run(&[
        "demo",
        "--workers",
        "6",
        "--children",
        "2",
        "--elements",
        "20k",
        "--dtype",
        "i32",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("2 child switches"), "{out}");
    assert!(
        out.contains("verified: every rank's result matches"),
        "{out}"
    );
}
