//! Print what the model sends on the replay test beds (`switchml_p4model_harness::testbed`), for
//! `p4/replay/replay.sh` to compare with BMv2.
//!
//! ```text
//! expected [VECTORS]          # default tests/vectors/wire.txt; writes to stdout:
//!   [liveness]                #   first: the liveness check (testbed::liveness_frame)
//!   in <port> <hex frame>
//!   out <port> <hex frame>    #   zero or more, in replica order
//!   [name] ...                #   then every vector; a Join, Status or Cookie comes out
//!                             #   on the CPU port (64) behind its packet_in header, and
//!   [name/cpu] ...            #   the controller's frame back (packet_out, then a frame)
//!                             #   goes in on the CPU port as the next entry
//! expected --cli              # the simple_switch_CLI commands of the test bed
//! expected --scenarios DIR [SWITCH]
//!                             # default tests/vectors/switch.txt, then the four-rank
//!                             # multi-pass bed (testbed::multi_pass), then the tiered beds,
//!                             # one per switch (testbed::tiered); for bed number NN:
//!                             #   DIR/NN-name.commands  the commands of its bed
//!                             #   DIR/NN-name.expected  liveness, then its steps, as above
//! ```
//!
//! Vectors run in file order through one switch, so state carries over as it does on BMv2.
//! Each scenario runs on a fresh bed, and its frames are checked against the file's outcomes
//! (`testbed::scenario_frames`) before they are written: a scenario the model gets wrong
//! stops the run with exit status 1. A tiered bed is one switch of a tree the model ran
//! whole (a parent and two children); BMv2 replays each switch alone on the frames it got
//! (checked against the reference in `p4/model/tests/scenarios.rs`).

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use switchml_p4model::Pipeline;
use switchml_p4model_harness::testbed;
use switchml_tests::{scenarios, vectors};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One vector in the output format.
fn entry(text: &mut String, name: &str, port: u16, frame: &[u8], out: &[(u16, Vec<u8>)]) {
    let _ = writeln!(text, "[{name}]\nin {port} {}", hex(frame));
    for (port, f) in out {
        let _ = writeln!(text, "out {port} {}", hex(f));
    }
}

/// The liveness entry, answered by a throwaway copy of the bed so that the bed's state (its
/// counters) is untouched.
fn liveness(text: &mut String, mut bed: Pipeline) {
    let (port, frame) = testbed::liveness_frame();
    let out = testbed::outputs(&mut bed, port, &frame);
    entry(text, "liveness", port, &frame, &out);
}

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

fn wire(path: Option<&str>) -> Result<String, String> {
    let text = match path {
        Some(p) => read(p)?,
        None => vectors::WIRE.to_string(),
    };
    let vectors = vectors::load(&text)?;
    let mut s = String::new();
    liveness(&mut s, testbed::pipeline());
    let mut p = testbed::pipeline();
    for v in vectors {
        let (port, frame) = testbed::frame(&v.bytes);
        // A Join, Status or Cookie goes to the CPU port; the controller's frame back on the
        // CPU port is the next entry (`NAME/cpu`), as the replay sends it.
        for (h, hop) in testbed::exchange(&mut p, port, &frame).iter().enumerate() {
            let name = match h {
                0 => v.name.clone(),
                1 => format!("{}/cpu", v.name),
                n => format!("{}/cpu{n}", v.name),
            };
            entry(&mut s, &name, hop.port, &hop.frame, &hop.out);
        }
    }
    Ok(s)
}

fn scenario_files(dir: &str, path: Option<&str>) -> Result<(), String> {
    let text = match path {
        Some(p) => read(p)?,
        None => scenarios::SWITCH.to_string(),
    };
    let mut all = scenarios::load(&text)?;
    // After the golden scenarios, the beds of the model's own (issue 31).
    all.push(testbed::multi_pass::scenario());
    let mut beds = Vec::new();
    for s in &all {
        beds.push((
            s.name.clone(),
            testbed::scenario_bed(s),
            testbed::scenario_frames(s)?,
        ));
    }
    for t in testbed::tiered::beds() {
        beds.push((t.name, t.bed, t.steps));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{dir}: {e}"))?;
    for (n, (name, bed, steps)) in beds.iter().enumerate() {
        let mut expected = String::new();
        liveness(&mut expected, bed.pipeline());
        for step in steps {
            entry(&mut expected, &step.name, step.port, &step.frame, &step.out);
        }
        let stem = Path::new(dir).join(format!("{n:02}-{name}"));
        for (ext, body) in [("commands", bed.commands()), ("expected", expected)] {
            let file = stem.with_extension(ext);
            std::fs::write(&file, body).map_err(|e| format!("{}: {e}", file.display()))?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--cli") => {
            print!("{}", testbed::cli_commands());
            Ok(())
        }
        Some("--scenarios") => match args.get(1) {
            Some(dir) => scenario_files(dir, args.get(2).map(String::as_str)),
            None => Err("usage: expected --scenarios DIR [SWITCH_TXT]".into()),
        },
        path => wire(path).map(|s| print!("{s}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("expected: {e}");
            ExitCode::FAILURE
        }
    }
}
