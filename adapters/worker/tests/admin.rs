//! Jobs added and removed on a running switch through its admin socket (issue 10: "jobs added
//! and removed on a running daemon"; protocol.md §4.1). Before, the jobs were fixed at start.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::*;
use switchml_core::wire::AbortReason;
use switchml_core::worker::WorkerError;
use switchml_switchd::admin_request as request;
use switchml_switchd::{RunningSwitch, SwitchConfig};
use switchml_worker::{Communicator, Op};

fn jobs_come_and_go_on_a_running_switch(pipeline: SwitchPipeline) {
    let dir =
        std::env::temp_dir().join(format!("switchml-admin-{pipeline}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("admin.sock");
    let sw = RunningSwitch::start(&SwitchConfig {
        admin: Some(path.clone()),
        spare_slots: 48,
        pipeline,
        ..SwitchConfig::new("127.0.0.1:0".parse().unwrap(), vec![])
    })
    .expect("switch starts");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o777,
        0o600,
        "only its owner may administer the switch"
    );
    let ask = |r: &str| request(&path, r, Duration::from_secs(5));

    assert_eq!(ask("list"), Ok("ok 0 jobs".into()));
    let added = ask("add 5:2:32:ab5c").unwrap();
    assert!(added.contains("job 5: 2 ranks, slots 0..32"), "{added}");
    assert!(ask("add 5:2:16:1").unwrap_err().contains("already exists"));
    assert!(ask("add 6:2:32:1").unwrap_err().contains("no free range"));
    // Before: a job added without a key was served, to anyone, with only a log line. Now
    // it is refused unless the operator says `none`.
    let keyless = ask("add 7:2:8").unwrap_err();
    assert!(
        keyless.contains("job 7 has no key") && keyless.contains("`none`"),
        "{keyless}"
    );
    assert!(ask("add 7:2:8:0").unwrap_err().contains("write `none`"));
    assert!(ask("add 7:2:8:none").unwrap().contains("job 7: 2 ranks"));
    assert_eq!(ask("remove 7"), Ok("ok job 7 removed".into()));
    assert!(ask("frobnicate").unwrap_err().contains("unknown request"));

    let world = 2;
    let config = |r| {
        config(r, world, sw.addr())
            .into_builder()
            .key(0xAB5C)
            .lanes(1)
            .build()
    };
    let job5 = |r| config(r).into_builder().job(5).build();
    let outcomes = per_rank(world, job5, |c| {
        let mut x = ints(c.rank(), world, 3000, 5);
        c.allreduce(&mut x, Op::Sum).map(|()| x)
    });
    let want: Vec<i32> = (0..3000)
        .map(|i| (0..world).map(|r| ints(r, world, 3000, 5)[i]).sum())
        .collect();
    for o in outcomes {
        assert_eq!(o.unwrap().unwrap(), want);
    }
    let listed = ask("list").unwrap();
    assert!(
        listed.contains("job 5: 2 ranks, slots 0..32, idle, 0 joined, 1 runs"),
        "{listed}"
    );

    assert_eq!(ask("remove 5"), Ok("ok job 5 removed".into()));
    assert!(ask("remove 5").unwrap_err().contains("no job 5"));
    let gone = Communicator::connect(&job5(0))
        .err()
        .expect("job 5 is gone");
    assert!(
        gone.to_string().contains("does not know this job"),
        "{gone}"
    );
    // Its slots are free again.
    assert!(ask("add 6:2:48:6").unwrap().contains("slots 0..48"));
    drop(sw);
    assert!(!path.exists(), "the daemon removes its socket");
    let _ = std::fs::remove_dir(&dir);
}

fn removing_a_running_job_tells_its_ranks(pipeline: SwitchPipeline) {
    let dir = std::env::temp_dir().join(format!(
        "switchml-admin-rm-{pipeline}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("admin.sock");
    let sw = switch_with(pipeline, &path);
    // One lane: once `list` shows rank 0 joined, every lane of it is in the run, so the
    // JobRemoved reaches it before a Join resend could meet the job already gone (UnknownJob).
    let slow = config(0, 2, sw.addr())
        .into_builder()
        .lanes(1)
        .retries(1000)
        .join_timeout(Duration::from_secs(60))
        .build();
    // Rank 0 joins and waits for rank 1, who never comes; the operator removes the job.
    let waiting = std::thread::spawn(move || Communicator::connect(&slow).err());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !request(&path, "list", Duration::from_secs(5))
        .unwrap()
        .contains("1 joined")
    {
        assert!(std::time::Instant::now() < deadline, "rank 0 never joined");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        request(&path, "remove 3", Duration::from_secs(5)),
        Ok("ok job 3 removed".into())
    );
    // Before: its ranks were told "the switch is shutting down" (Abort Shutdown), which it
    // was not. Now Abort JobRemoved (16, detail 0).
    let e = waiting.join().unwrap().expect("rank 0 fails");
    let removed = matches!(&e, switchml_worker::Error::Worker { error, .. }
        if **error == WorkerError::Refused { reason: AbortReason::JobRemoved, detail: 0 });
    assert!(removed, "{e:?}");
    assert!(e.to_string().contains("the job was removed"), "{e}");
    drop(sw);
    let _ = std::fs::remove_dir(&dir);
}

/// A switch started with a job that has no key, none said: refused, naming the way out;
/// with `allow_keyless` it serves it.
fn a_keyless_job_is_refused_unless_said(pipeline: SwitchPipeline) {
    // The key would come from SWITCHML_JOB_KEY; the test process does not set it.
    assert!(std::env::var_os("SWITCHML_JOB_KEY").is_none());
    let spec = format!("{JOB}:2:32").parse().unwrap();
    let config = SwitchConfig {
        pipeline,
        ..SwitchConfig::new("127.0.0.1:0".parse().unwrap(), vec![spec])
    };
    let e = RunningSwitch::start(&config)
        .err()
        .expect("a keyless job is refused")
        .to_string();
    assert!(
        e.contains("has no key") && e.contains("--allow-keyless"),
        "{e}"
    );
    let sw = RunningSwitch::start(&SwitchConfig {
        allow_keyless: true,
        ..config
    })
    .expect("allowed explicitly");
    drop(sw);
}

/// Issue 29, item 3: the admin socket gives a job a share of the slot pool, and then two
/// jobs on one switch both run. Before, a job kept the range it was added with: one that
/// asked for the whole pool left none for the next, which was refused.
fn a_share_limits_a_job_and_two_jobs_both_progress(pipeline: SwitchPipeline) {
    let dir = std::env::temp_dir().join(format!(
        "switchml-admin-share-{pipeline}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("admin.sock");
    let greedy = format!("5:2:64:{KEY:x}").parse().unwrap();
    let sw = RunningSwitch::start(&SwitchConfig {
        admin: Some(path.clone()),
        pipeline,
        ..SwitchConfig::new("127.0.0.1:0".parse().unwrap(), vec![greedy])
    })
    .expect("switch starts");
    let ask = |r: &str| request(&path, r, Duration::from_secs(5));
    let other = format!("add 6:2:32:{KEY:x}");
    // Job 5 holds the whole pool of 64 slots: no room for job 6.
    assert!(ask(&other).unwrap_err().contains("no free range"));
    assert_eq!(
        ask("share 5 50"),
        Ok("ok job 5: 50% of the pool of 64, slots 0..32".into())
    );
    assert!(ask(&other).unwrap().contains("slots 32..64"));
    assert!(ask("share 9 50").unwrap_err().contains("no job 9"));
    // Job 5 cannot take more than what job 6 leaves it.
    assert!(ask("share 5 60").unwrap_err().contains("no free range"));
    let listed = ask("list").unwrap();
    assert!(listed.contains("job 5: 2 ranks, slots 0..32"), "{listed}");

    let world = 2;
    let addr = sw.addr();
    let job = |id: u16, window: u16| {
        move |r| {
            config(r, world, addr)
                .into_builder()
                .job(id)
                .key(KEY)
                .lanes(1)
                .window(window)
                .build()
        }
    };
    // The share bounds the job's data in flight: a window past it is refused.
    let too_wide = Communicator::connect(&job(5, 64)(0))
        .err()
        .expect("a 64-slot window does not fit in 32 slots");
    assert!(
        too_wide.to_string().contains("outside the job's slots"),
        "{too_wide}"
    );
    let len = 20_000;
    let run = |id: u16| {
        per_rank(world, job(id, 32), |c| {
            let x = ints(c.rank(), world, len, u64::from(id));
            // Several all-reduces each, so that the two jobs' runs overlap.
            let mut last = Vec::new();
            for _ in 0..3 {
                let mut y = x.clone();
                c.allreduce(&mut y, Op::Sum).expect("all-reduce");
                last = y;
            }
            last
        })
    };
    let (five, six) = std::thread::scope(|s| {
        let five = s.spawn(|| run(5));
        let six = s.spawn(|| run(6));
        (five.join().unwrap(), six.join().unwrap())
    });
    for (id, outcomes) in [(5u16, five), (6u16, six)] {
        let want = int_sum(world, len, u64::from(id));
        for o in outcomes {
            assert_eq!(o.unwrap(), want, "job {id}");
        }
    }
    drop(sw);
    let _ = std::fs::remove_dir(&dir);
}

fn switch_with(pipeline: SwitchPipeline, admin: &std::path::Path) -> RunningSwitch {
    let spec = format!("{JOB}:2:32:{KEY:x}").parse().unwrap();
    RunningSwitch::start(&SwitchConfig {
        admin: Some(admin.to_owned()),
        pipeline,
        ..SwitchConfig::new("127.0.0.1:0".parse().unwrap(), vec![spec])
    })
    .expect("switch starts")
}

on_both_pipelines!(
    a_keyless_job_is_refused_unless_said,
    a_share_limits_a_job_and_two_jobs_both_progress,
    jobs_come_and_go_on_a_running_switch,
    removing_a_running_job_tells_its_ranks
);
