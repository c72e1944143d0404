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
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start switchml");
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
/// address.
fn switch(pipeline: &str, job: &str) -> (Proc, String) {
    let args = ["switch", "--bind", "127.0.0.1:0", "--job", job];
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

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN).args(args).output().expect("run switchml");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn a_killed_worker_is_named_by_the_others_within_their_timeout(pipeline: &str) {
    let (sw, addr) = switch(pipeline, "5:3:64");
    let workers: Vec<Proc> = (0..3)
        .map(|r| {
            let rank = r.to_string();
            Proc::start(&[
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
                "--rto-ms",
                "2",
                "--retries",
                "10",
                "--window",
                "16",
                "--count",
                largest_count(pipeline),
            ])
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
    for (rank, w) in [(0, w0), (1, w1)] {
        let (code, err) = w.finish(Duration::from_secs(30));
        assert_eq!(code, Some(1), "rank {rank} should fail: {err}");
        assert!(
            err.contains("rank 2") || err.contains("ranks 2"),
            "rank {rank}'s error does not name rank 2: {err}"
        );
    }
    drop(sw);
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

fn the_switch_prints_its_counters_on_sigterm(pipeline: &str) {
    let (sw, _) = switch(pipeline, "1:2");
    // SAFETY: sends SIGTERM to our own child, whose pid is live until we wait for it.
    unsafe { libc::kill(sw.child.id() as libc::pid_t, libc::SIGTERM) };
    sw.expect_line("final counters", Duration::from_secs(10));
    let (code, _) = sw.finish(Duration::from_secs(10));
    assert_eq!(code, Some(0));
}
