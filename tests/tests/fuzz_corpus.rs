//! Replay the committed fuzz corpora and crash regressions through the same checks the fuzz
//! targets run, so that `cargo test` guards everything the fuzzer ever found, with no
//! fuzzer and no nightly toolchain.
//!
//! For each target, every file in `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`
//! is one input. The seeds built by `switchml_tests::checks::seeds` are checked too, and
//! `write_seed_corpus` (ignored; run it by name) writes them into the corpus directories.

use std::fs;
use std::path::{Path, PathBuf};

use switchml_p4model_harness::equivalence;
use switchml_tests::checks::worker::WorkerOp;
use switchml_tests::checks::{quant, seeds, switch, wire, worker};

/// A fuzz target's check: any bytes in, a panic on a broken invariant.
type Check = fn(&[u8]);

/// A fuzz target's name and its check.
const TARGETS: [(&str, Check); 5] = [
    ("wire_roundtrip", wire::check_wire),
    ("switch_sequence", switch::check_switch),
    ("worker_sequence", worker::check_worker),
    ("quant", quant::check_quant),
    ("model_vs_reference", model_vs_reference),
];

/// What `fuzz/fuzz_targets/model_vs_reference.rs` runs.
fn model_vs_reference(data: &[u8]) {
    equivalence::check_switch_sequence(data);
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files in `dir`, sorted; none if it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Run `check` on every file of `dir`; name the file if it panics. Return how many ran.
fn replay(dir: &Path, check: fn(&[u8])) -> usize {
    let files = files(dir);
    for path in &files {
        let bytes = fs::read(path).expect("readable corpus file");
        let result = std::panic::catch_unwind(|| check(&bytes));
        assert!(result.is_ok(), "{} fails its check", path.display());
    }
    files.len()
}

#[test]
fn corpora_pass_their_checks() {
    for (target, check) in TARGETS {
        let n = replay(&fuzz_dir().join("corpus").join(target), check);
        assert!(n > 0, "fuzz/corpus/{target}/ is empty or missing");
    }
}

#[test]
fn crash_regressions_pass_their_checks() {
    for (target, check) in TARGETS {
        replay(&fuzz_dir().join("regressions").join(target), check);
    }
}

#[test]
fn seeds_pass_their_checks() {
    for (target, seeds) in seeds::all() {
        let check = TARGETS.iter().find(|(t, _)| *t == target).expect("known").1;
        for (name, bytes) in seeds {
            let result = std::panic::catch_unwind(|| check(&bytes));
            assert!(result.is_ok(), "seed {target}/{name} fails its check");
        }
    }
}

/// The switch bug the fuzzer found (fixed: protocol.md §4, "Why `seen[1−v]` is not
/// cleared"): rank 0 of a 3-rank job contributes to use 0 of slot 0, then to use 1 (which
/// cleared its bit in use 0), then resends use 0 — and was counted twice. Minimized by
/// `cargo fuzz tmin` from a `switch_sequence` crash: three Contributions, empty payloads.
/// Since runs have sessions (§4.1) the three ranks join first, and the Contributions name
/// the run; the reproducer in `fuzz/regressions/switch_sequence/` is these ops.
#[test]
fn switch_never_counts_a_rank_twice_after_it_skipped_ahead() {
    let session = switch::NONCES[0];
    let contribute = |seq| switch::SwitchOp::Contribute {
        job: 0,
        rank: 0,
        slot: 0,
        seq,
        bad_ver: false,
        exp: 0,
        retransmit: false,
        session,
        values: vec![],
    };
    let mut ops = seeds::join_all(0);
    ops.extend([contribute(0), contribute(1), contribute(0)]);
    let path = fuzz_dir().join("regressions/switch_sequence/double-count-after-skipping-ahead");
    let file = fs::read(path).expect("the reproducer is committed");
    assert_eq!(
        switch::decode_ops(&file),
        ops,
        "the reproducer is these ops"
    );
    switch::check_switch_sequence(&ops);
}

/// The lost-timer bug of the worker (fixed in d81a55a): with no
/// retries, both slots of a lane stall at once; only the first is probed, the second loses
/// its retransmission timer. When the first slot's result arrives, the probe is dropped and
/// the second slot waits forever with no timer armed.
#[test]
fn worker_never_hangs_with_a_use_outstanding() {
    let setup = worker::Setup {
        world: 2,
        rank: 0,
        window: 2,
        slot_lo: 0,
        count: 1,
        retries: 0,
    };
    let int32_pair = worker::TensorSpec {
        kind: 1,
        average: false,
        words: vec![5, 6],
    };
    let ops = [
        WorkerOp::JoinReply {
            world: 0,
            complete: true,
            foreign: false,
            max_count: 4,
            epoch: 0,
            rank: 1,
            session: 0,
            bitmap: vec![3],
        },
        WorkerOp::Wait(250),
        WorkerOp::Answer {
            pick: 0,
            mutation: 0xFF,
            exp: 0,
            flags: 0,
            to_all: true,
            values: [11, 0, 0, 0],
        },
    ];
    worker::check_worker_sequence_with(&setup, &[int32_pair], &ops, true);
}

/// Write the seeds into `fuzz/corpus/<target>/seed-<name>`.
#[test]
#[ignore = "writes files; run by name to refresh the seed corpus"]
fn write_seed_corpus() {
    for (target, seeds) in seeds::all() {
        let dir = fuzz_dir().join("corpus").join(target);
        fs::create_dir_all(&dir).expect("corpus directory");
        for (name, bytes) in seeds {
            fs::write(dir.join(format!("seed-{name}")), bytes).expect("seed written");
        }
    }
}
