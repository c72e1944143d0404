//! End to end in network namespaces (root only), the switch on its AF_PACKET socket: the
//! topology and the workers are in `common` (drawn there). Skipped, with a message, when
//! not root or when `ip netns` fails.

mod common;

use std::net::SocketAddr;

use common::*;
use switchml_core::p4app::P4appSize;
use switchml_p4app_switch::{P4appSwitchConfig, RunningP4appSwitch};

#[test]
fn two_workers_64_values_with_junk() {
    scenario(PACKET, "a", 2, P4appSize::Elements64, 0);
}

#[test]
fn four_workers_256_values_with_junk() {
    scenario(PACKET, "b", 4, P4appSize::Elements256, 0);
}

#[test]
fn two_workers_with_one_percent_loss() {
    scenario(PACKET, "c", 2, P4appSize::Elements64, 1);
}

#[test]
fn four_workers_with_one_percent_loss() {
    scenario(PACKET, "d", 4, P4appSize::Elements64, 1);
}

/// Our `Communicator` with `dialect = p4app` (what `SWITCHML_DIALECT=p4app` sets): the
/// controller's address as its switch, int32, float32, f16 (through f32) and an average.
#[test]
fn the_communicator_speaks_the_dialect() {
    use switchml_worker::{f16, CommConfig, Communicator, Dialect, Op};
    let p = 3u8;
    let Some(t) = topology(PACKET, "e", p, 0) else {
        return;
    };
    let sw = in_ns(&t.ns("switch"), || {
        RunningP4appSwitch::start(&P4appSwitchConfig::new("s0", SWITCH_IP))
    })
    .join()
    .unwrap()
    .expect("start the switch");
    let n = 1000;
    let results = on_workers(&t, p, move |r| {
        let control = SocketAddr::from((CONTROL_IP, switchml_p4app_switch::CONTROL_PORT));
        let config = CommConfig::builder(u16::from(r), u16::from(p), control, 0)
            .dialect(Dialect::P4app)
            .count(64)
            .build();
        let comm = Communicator::connect(&config).expect("connect");
        let (mut ints, floats) = input(usize::from(r), 0, n);
        comm.allreduce(&mut ints, Op::Sum).expect("int32");
        let floats = comm
            .allreduce_async(floats, Op::Sum)
            .wait()
            .expect("float32");
        let mut halves: Vec<f16> = (0..n).map(|j| f16::from_f32((j % 17) as f32)).collect();
        comm.allreduce(&mut halves, Op::Average).expect("f16");
        (ints, floats, halves)
    });
    let stats = sw.stop();
    let as_jobs: Vec<_> = results
        .iter()
        .map(|(i, f, _)| vec![(i.clone(), f.clone())])
        .collect();
    check(usize::from(p), &[(Kind::I32, n)], &as_jobs);
    check(usize::from(p), &[(Kind::F32, n)], &as_jobs);
    for (_, _, halves) in &results {
        for (j, h) in halves.iter().enumerate() {
            assert_eq!(h.to_f32(), (j % 17) as f32, "f16 average, element {j}");
        }
    }
    assert_eq!(stats.registered, u16::from(p));
}
