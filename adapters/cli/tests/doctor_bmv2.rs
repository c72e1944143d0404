//! `switchml doctor --bmv2-cli` against a stand-in for a BMv2 switch: a UDP responder that
//! answers Status as the v1model program does (a StatusReply with zero counters), and a fake
//! `simple_switch_CLI` that answers `table_dump_entry_from_key` and `counter_read` in the
//! real CLI's output format (BMv2's tools/runtime_CLI.py), so the counters come from the
//! control plane under the names the doctor prints for the software switch.

use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use switchml_core::wire::{
    Message, StatusCounters, StatusFlags, StatusReplyPacket, StatusReplyRepr,
};

const BIN: &str = env!("CARGO_BIN_EXE_switchml");

/// The fake CLI. Job 7 is job table entry 2; every counter cell holds a value that names
/// it (received 1000; drops[i] i + 1; the job counters of entry 2 100, 101, …; any other
/// entry 999999, so a wrong index shows). `old` prints the BMv2 < 1.15 counter format;
/// `dead` answers as the CLI does when no switch listens.
const FAKE_CLI: &str = r#"#!/usr/bin/env bash
set -euo pipefail
mode=${1:-new}
if [[ $mode == dead ]]; then
    echo "Could not connect to thrift client on port 9090"
    echo "Make sure the switch is running and that you have the right port"
    exit 1
fi
echo "Obtaining JSON from switch..."
echo "Done"
echo "Control utility for runtime P4 table manipulation"
jobs=(job_contributions job_completions job_retransmit_replies job_duplicates job_stale
      job_rejected job_joins job_probes job_aborts job_overflows job_runs job_unauthorized)
while read -r cmd a b c; do
    printf 'RuntimeCmd: '
    case $cmd in
    table_dump_entry_from_key)
        if [[ $a != job_table || $b != 7 ]]; then
            echo "Invalid table operation (BAD_MATCH_KEY)"; continue
        fi
        echo "Dumping entry 0x2"
        echo "Match key:"
        echo "* prefix.job           : EXACT     0007"
        echo "Action entry: SwitchmlIngress.classifier.set_job - 03, 00, 08, 03, 02, 07, 0123456789abcdef"
        ;;
    counter_read)
        v=""
        if [[ $a == received ]]; then v=1000; fi
        if [[ $a == drops ]]; then v=$((b + 1)); fi
        for i in "${!jobs[@]}"; do
            if [[ $a == "${jobs[$i]}" ]]; then
                if [[ $b == 2 ]]; then v=$((100 + i)); else v=999999; fi
            fi
        done
        if [[ -z $v ]]; then echo "Error: Invalid counter name ($a)"; continue; fi
        if [[ $mode == old ]]; then
            echo "$a[$b]=  BmCounterValue(packets=$v, bytes=$((v * 60)))"
        else
            echo "$a[$b]= ($((v * 60)) bytes, $v packets)"
        fi
        ;;
    *) echo "Error: unexpected command $cmd $c" ;;
    esac
done
echo "RuntimeCmd: "
"#;

/// A UDP socket that answers each Status about job 7 as the v1model program would.
fn p4_switch() -> String {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let addr = sock.local_addr().expect("addr").to_string();
    sock.set_read_timeout(Some(Duration::from_secs(30))).ok();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            let Ok(Message::Status(s)) = Message::parse(&buf[..n]) else {
                continue;
            };
            let joined = [0b011u8];
            let reply = StatusReplyRepr {
                job: s.job,
                rank: s.rank,
                world: 3,
                flags: StatusFlags::RUN_OPEN,
                shards: 0,
                slot_count: 8,
                epoch: 0x0102_0304,
                counters: StatusCounters::default(), // a P4 data plane cannot read them
                joined: &joined,
            };
            let mut out = vec![0u8; reply.buffer_len()];
            reply.emit(&mut StatusReplyPacket::new_unchecked(&mut out[..]));
            sock.send_to(&out, from).ok();
        }
    });
    addr
}

fn fake_cli() -> (tempdir::Dir, PathBuf) {
    let dir = tempdir::Dir::new();
    let path = dir.0.join("simple_switch_CLI");
    std::fs::write(&path, FAKE_CLI).expect("write the fake CLI");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (dir, path)
}

/// A directory removed when dropped.
mod tempdir {
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn new() -> Dir {
            let p = std::env::temp_dir().join(format!(
                "switchml-doctor-bmv2-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::create_dir_all(&p).expect("temp dir");
            Dir(p)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }
}

fn doctor(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .arg("doctor")
        .args(args)
        .output()
        .expect("run switchml");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn json(out: &str) -> Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn counters_come_from_the_cli_under_the_software_switch_names() {
    let addr = p4_switch();
    let (_dir, cli) = fake_cli();
    let base = ["--switch", &addr, "--job", "7", "--probes", "1", "--json"];

    // Without the CLI: the StatusReply's zeros, and a note saying why.
    let (code, out) = doctor(&base);
    assert_eq!(code, Some(0), "{out}");
    let plain = json(&out);
    assert_eq!(plain["counters_source"], "status_reply");
    assert_eq!(plain["counters"]["switch_received"], 0);
    assert!(
        plain["note"].as_str().unwrap().contains("--bmv2-cli"),
        "{out}"
    );

    for mode in ["new", "old"] {
        let command = format!("'{}' {mode}", cli.display());
        let mut args = base.to_vec();
        args.extend(["--bmv2-cli", &command]);
        let (code, out) = doctor(&args);
        assert_eq!(code, Some(0), "{mode}: {out}");
        let v = json(&out);
        assert_eq!(v["counters_source"], "bmv2_cli", "{mode}");
        assert_eq!(v["world"], 3);
        assert_eq!(v["joined"], serde_json::json!([0, 1]));
        assert!(v.get("note").is_none());
        let c = v["counters"].as_object().unwrap();
        let names: Vec<&String> = c.keys().collect();
        let plain_names: Vec<&String> = plain["counters"].as_object().unwrap().keys().collect();
        assert_eq!(names, plain_names, "the software switch's names");
        assert_eq!(c["switch_received"], 1000);
        assert_eq!(c["switch_dropped"], (1..=15).sum::<u64>());
        assert_eq!(c["contributions"], 100);
        assert_eq!(c["runs"], 110);
        assert_eq!(c["unauthorized"], 111);
        assert_eq!(c["malformed"], 1);
        assert_eq!(c["bad_source"], 15);
    }
}

#[test]
fn the_text_report_says_where_the_counters_come_from() {
    let addr = p4_switch();
    let (_dir, cli) = fake_cli();
    let command = format!("'{}'", cli.display());
    let (code, out) = doctor(&[
        "--switch",
        &addr,
        "--job",
        "7",
        "--probes",
        "1",
        "--bmv2-cli",
        &command,
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("counters (read by simple_switch_CLI): switch_received 1000, switch_dropped 120, contributions 100"),
        "{out}"
    );
    assert_eq!(out.matches("counters").count(), 1, "{out}");
}

#[test]
fn a_cli_that_cannot_reach_the_switch_or_job_is_an_error() {
    let addr = p4_switch();
    let (_dir, cli) = fake_cli();
    let dead = format!("'{}' dead", cli.display());
    let (code, out) = doctor(&[
        "--switch",
        &addr,
        "--job",
        "7",
        "--probes",
        "1",
        "--json",
        "--bmv2-cli",
        &dead,
    ]);
    assert_eq!(code, Some(1), "{out}");
    let v = json(&out);
    assert!(
        v["control_error"]
            .as_str()
            .unwrap()
            .contains("Could not connect"),
        "{out}"
    );
    assert_eq!(v["reachable"], true);

    let live = format!("'{}'", cli.display());
    let (code, out) = doctor(&[
        "--switch",
        &addr,
        "--job",
        "9",
        "--probes",
        "1",
        "--json",
        "--bmv2-cli",
        &live,
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(json(&out)["control_error"]
        .as_str()
        .unwrap()
        .contains("Invalid table operation"));
}
