//! A program with the software switch inside: it serves job 1 from the start, takes job 2
//! at run time through its admin socket (what `switchml job add` does from a shell), lets
//! the ranks of both all-reduce, integers in one and bf16 in the other, and reads the
//! switch's counters per job before it stops.
//!
//! `cargo run -p switchml-examples --example embedded_switch`

use std::time::Duration;

use switchml_core::switch::DropReason;

use switchml_switchd::{admin_request, fresh_key, JobSpec, RunningSwitch, SwitchConfig};
use switchml_worker::{bf16, CommConfig, Communicator, Op};

/// Run `world` ranks of job `job` (key `key`) at `switch`, each all-reducing what `input`
/// gives it; return rank 0's result.
fn ranks<T: switchml_worker::Element>(
    switch: std::net::SocketAddr,
    job: u16,
    key: u64,
    world: u16,
    input: impl Fn(u16) -> Vec<T> + Sync,
) -> Result<Vec<T>, switchml_worker::Error> {
    let results: Vec<_> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..world)
            .map(|rank| {
                let input = &input;
                s.spawn(move || {
                    // A launcher would set RANK, WORLD_SIZE, SWITCHML_SWITCH, SWITCHML_JOB and
                    // SWITCHML_JOB_KEY, and each rank would call `Communicator::from_env()`.
                    let config = CommConfig::builder(rank, world, switch, job)
                        .key(key)
                        .build();
                    let comm = Communicator::connect(&config)?;
                    comm.allreduce_async(input(rank), Op::Sum).wait()
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("a rank panicked"))
            .collect()
    });
    results.into_iter().next().expect("at least one rank")
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let admin = std::env::temp_dir().join(format!("switchml-example-{}.sock", std::process::id()));
    let key1 = fresh_key();
    let switch = RunningSwitch::start(&SwitchConfig {
        admin: Some(admin.clone()),
        // Room in the slot pool for the jobs that come later.
        spare_slots: 256,
        ..SwitchConfig::new(
            "127.0.0.1:0".parse()?,
            vec![JobSpec {
                id: 1,
                world: 3,
                slots: 256,
                key: Some(key1),
            }],
        )
    })?;
    println!(
        "switch on {} (epoch {:#010x})",
        switch.addr(),
        switch.epoch()
    );

    // A second job, added while the switch runs.
    let key2 = fresh_key();
    let answer = admin_request(
        &admin,
        &format!("add 2:2:256:{key2:x}"),
        Duration::from_secs(5),
    )?;
    println!("admin: {answer}");

    // Job 1: three ranks sum integers, exactly.
    let sum = ranks(switch.addr(), 1, key1, 3, |r| {
        vec![i32::from(r) + 1; 10_000]
    })?;
    assert!(sum.iter().all(|&v| v == 6));
    // Job 2: two ranks sum bfloat16s.
    let sum = ranks(switch.addr(), 2, key2, 2, |_| {
        vec![bf16::from_f32(0.5); 10_000]
    })?;
    assert!(sum.iter().all(|&v| v == bf16::ONE));

    let counters = switch.stop()?;
    for job in &counters.jobs {
        println!(
            "job {}: {} datagrams in, {} results multicast, {} copies sent",
            job.job, job.received, job.multicasts, job.sent
        );
    }
    // Every datagram the switch dropped is counted by reason.
    for reason in DropReason::ALL {
        match counters.switch.drops(reason) {
            0 => {}
            n => println!("dropped as {reason:?}: {n}"),
        }
    }
    Ok(())
}
