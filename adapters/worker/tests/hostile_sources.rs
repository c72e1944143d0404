//! A hostile source: one Status message sent from UDP source port 0 (written by hand on a
//! raw socket) used to make the switch answer to port 0, `sendmmsg` failed with `EINVAL`
//! and the daemon ended, taking every job with it. Now the datagram is dropped on receive
//! and counted as a bad source, and the switch goes on serving a real all-reduce.
//!
//! Raw sockets need `CAP_NET_RAW`; without it the test says so and passes.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::raw_udp::RawUdp;
use common::*;
use switchml_core::wire::{status, StatusPacket, StatusRepr};
use switchml_worker::Op;

fn a_status_from_port_zero_is_dropped_and_the_switch_serves_on(pipeline: SwitchPipeline) {
    let world = 2;
    let sw = switch(pipeline, world, 32, 0.0, 0);
    let SocketAddr::V4(to) = sw.addr() else {
        panic!("the test switch listens on 127.0.0.1");
    };
    let mut payload = [0u8; status::LEN];
    StatusRepr {
        job: JOB,
        rank: 0,
        nonce: 1,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(common::KEY)
    .emit(&mut StatusPacket::new_unchecked(&mut payload[..]));
    let Some(raw) = RawUdp::open().expect("raw socket") else {
        println!("skipped: raw sockets need CAP_NET_RAW (socket(2) said EPERM)");
        return;
    };
    raw.send(0, to, &payload).expect("raw send");
    // The counters are published after a whole step (receive, handle, send), so once the
    // datagram shows as received, the switch has done all it will do with it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while sw.counters().received == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sw.counters().received, 1, "the switch saw the datagram");
    assert!(
        sw.is_running(),
        "one datagram from port 0 stopped the switch"
    );

    let outcomes = per_rank(
        world,
        |r| config(r, world, sw.addr()),
        |comm| {
            let mut x = ints(comm.rank(), world, 3000, 7);
            comm.allreduce(&mut x, Op::Sum).map(|()| x)
        },
    );
    let (a, b) = (ints(0, world, 3000, 7), ints(1, world, 3000, 7));
    let expect: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
    for (rank, o) in outcomes.into_iter().enumerate() {
        let got = o
            .and_then(|r| r)
            .unwrap_or_else(|e| panic!("rank {rank}: {e}"));
        assert!(got == expect, "rank {rank}: wrong sum");
    }
    let c = sw.stop().expect("the switch ends without an error");
    assert_eq!(
        c.bad_source, 1,
        "the datagram from port 0 counts as a bad source"
    );
    assert_eq!(c.send_failures, 0, "nothing was answered to port 0");
    // Every other datagram was the job's: the Status never reached the job's accounting.
    let job = c.job(JOB).unwrap();
    assert_eq!(
        c.received,
        job.received + 1,
        "the Status was handled: {c:?}"
    );
}

on_both_pipelines!(a_status_from_port_zero_is_dropped_and_the_switch_serves_on);
