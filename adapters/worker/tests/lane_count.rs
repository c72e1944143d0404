//! Issue 11: the number of lanes per rank was not agreed at Join. Rank 0 with 2 lanes and
//! rank 1 with 1 lane both joined (the slot ranges and chunk size of their lanes agreed),
//! then split every tensor differently and deadlocked, each blaming the other ("rank 0
//! lane 1: slot 16 stalled at use 0: no contribution from ranks 1"). Now the first Join of
//! the run fixes `L` with the lane's slots and chunk size, and a rank with another `L`
//! fails at `connect` with an error that names the job's `L` and the setting to change;
//! the rank already in the run is told which rank was refused (protocol.md §4.3).
//!
//! ```text
//!   rank A (L lanes, joins first) ──┐
//!                                   ├── switch (job 3: 2 ranks, 32 slots)
//!   rank B (other L, joins second) ─┘
//! ```

mod common;

use std::time::{Duration, Instant};

use common::doctor::status;
use common::*;
use switchml_core::wire::AbortReason;
use switchml_core::worker::WorkerError;
use switchml_worker::{CommConfig, Communicator, Error, ShapeSetting};

/// How long the first rank waits for the second, which never comes in: long enough that
/// the second's Join reaches the run while it is open, even on a busy machine.
const FIRST_WAITS: Duration = Duration::from_secs(3);

fn with_lanes(rank: u16, lanes: u16, join_timeout: Duration, c: &CommConfig) -> CommConfig {
    job_config(&job_spec(2, 32), rank, c.switch)
        .into_builder()
        .lanes(lanes)
        .join_timeout(join_timeout)
        .build()
}

/// Rank `first` (with `first_lanes` lanes) joins, then rank `1 - first` (with
/// `second_lanes`): the second must fail at once, naming the first's number of lanes.
fn second_rank_is_refused(
    pipeline: SwitchPipeline,
    first: u16,
    first_lanes: u16,
    second_lanes: u16,
) {
    let sw = switch(pipeline, 2, 32, 0.0, 0);
    let base = job_config(&job_spec(2, 32), 0, sw.addr());
    let second = 1 - first;
    std::thread::scope(|s| {
        let first_rank =
            s.spawn(|| Communicator::connect(&with_lanes(first, first_lanes, FIRST_WAITS, &base)));
        // Wait until the first rank's Joins opened the run.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !status(sw.addr(), JOB).run_open() {
            assert!(
                Instant::now() < deadline,
                "{pipeline}: rank {first} never joined"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Its own join timeout is 30 s: an `Error::Shape` can only be the switch's answer,
        // so the error itself shows it was told, not timed out.
        let config = with_lanes(second, second_lanes, Duration::from_secs(30), &base);
        let outcome = Communicator::connect(&config);
        let Err(e) = outcome else {
            panic!(
                "{pipeline}: rank {second} with {second_lanes} lanes joined a run of {first_lanes}"
            );
        };
        assert_eq!(
            e,
            Error::Shape {
                rank: second,
                setting: ShapeSetting::Lanes,
                agreed: first_lanes,
                ours: second_lanes,
            },
            "{pipeline}: {e}"
        );
        let text = e.to_string();
        let fix = format!("set SWITCHML_LANES={first_lanes}");
        assert!(text.contains(&fix), "{pipeline}: {text}");
        // The refused rank never joined (the run may already be over: see below).
        let joined = status(sw.addr(), JOB).joined;
        assert!(
            joined.iter().all(|b| b & (1 << second) == 0),
            "{pipeline}: rank {second} is in the run"
        );
        // The first rank is told which rank was refused (protocol.md §4.3), instead of
        // waiting out its join timeout.
        let first_outcome = first_rank.join().unwrap();
        let told = match &first_outcome {
            Err(Error::Worker { error, .. }) => matches!(
                **error,
                WorkerError::Refused { reason: AbortReason::RankRefused, detail } if detail == second
            ),
            _ => false,
        };
        assert!(told, "{pipeline}: {:?}", first_outcome.err());
    });
}

fn a_rank_with_fewer_lanes_than_the_run_fails_naming_the_jobs_lanes(pipeline: SwitchPipeline) {
    second_rank_is_refused(pipeline, 0, 2, 1);
}

fn a_rank_with_more_lanes_than_the_run_fails_naming_the_jobs_lanes(pipeline: SwitchPipeline) {
    second_rank_is_refused(pipeline, 1, 1, 2);
}

#[test]
fn the_error_says_which_setting_to_change() {
    let e = Error::Shape {
        rank: 1,
        setting: ShapeSetting::Lanes,
        agreed: 2,
        ours: 1,
    };
    assert_eq!(
        e.to_string(),
        "rank 1: the job's ranks use 2 lanes; this rank has 1: set SWITCHML_LANES=2 (`lanes = 2` in the file)"
    );
    let e = Error::Shape {
        rank: 0,
        setting: ShapeSetting::Window,
        agreed: 1,
        ours: 16,
    };
    assert_eq!(
        e.to_string(),
        "rank 0: the job's ranks use 1 slot per lane; this rank has 16: set SWITCHML_WINDOW=1 (`window = 1` in the file)"
    );
}

on_both_pipelines!(
    a_rank_with_fewer_lanes_than_the_run_fails_naming_the_jobs_lanes,
    a_rank_with_more_lanes_than_the_run_fails_naming_the_jobs_lanes,
);
