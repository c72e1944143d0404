//! An all-reduce from Rust: a software switch on loopback in this process, two ranks.
//!
//! `cargo run -p switchml-examples --example allreduce`

use switchml_switchd::{JobSpec, RunningSwitch, SwitchConfig};
use switchml_worker::{CommConfig, Communicator, Op};

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Job 1: two ranks, 256 slots, and a key that only its ranks know.
    let job = JobSpec {
        id: 1,
        world: 2,
        slots: 256,
        key: Some(0x5EC2E7),
    };
    let switch = RunningSwitch::start(&SwitchConfig::new("127.0.0.1:0".parse()?, vec![job]))?;
    let rank = |r: u16| {
        let config = CommConfig::builder(r, 2, switch.addr(), 1)
            .key(0x5EC2E7)
            .build();
        let comm = Communicator::connect(&config)?;
        let mut x: Vec<f32> = (0..100_000)
            .map(|i| (i % 7) as f32 * (f32::from(r) + 1.0))
            .collect();
        comm.allreduce(&mut x, Op::Sum).map(|()| x)
    };
    let [a, b] =
        std::thread::scope(|s| [s.spawn(|| rank(0)), s.spawn(|| rank(1))].map(|t| t.join()));
    let (a, b) = (a.expect("rank 0")?, b.expect("rank 1")?);
    assert_eq!(a, b, "every rank gets the same sum");
    assert!(a
        .iter()
        .enumerate()
        .all(|(i, &v)| v == (i % 7) as f32 * 3.0));
    println!(
        "2 ranks summed {} floats through the switch at {}",
        a.len(),
        switch.addr()
    );
    switch.stop()?;
    Ok(())
}
