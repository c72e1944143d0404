//! Found by the adversarial suite, now closed: an off-path sender that knows or guesses a
//! joining lane's address (here read from `/proc/net/udp`; on a network, a sweep of the
//! ephemeral ports) sends the switch, from that address, something the switch refuses — a
//! Join with a wrong key (`BadKey`), a Probe of session 0 (`SessionEnded`) — and the switch
//! answers to that address. A joining worker used to accept an Abort of session 0, so its
//! connect failed ("the job key is wrong"). Now a refusal of a Join names that Join's nonce,
//! and a worker accepts an Abort only of its own nonce or its run's session, never 0
//! (protocol.md §3.6, §4.1); the same rule keeps a JoinReply of another process's Join out.
//!
//! Raw sockets need `CAP_NET_RAW`; without them the test says so and passes.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::attacker::{Attacker, Via};
use common::forge::{bytes_of, Forger};
use common::*;
use switchml_core::wire::{JoinRepr, Message, ProbeRepr};
use switchml_worker::{Communicator, Op};

fn a_refusal_spoofed_to_a_joining_lane_does_not_end_its_join(pipeline: SwitchPipeline) {
    let spec = job_spec(2, 32);
    let sw = switch_serving(pipeline, &[spec]);
    let SocketAddr::V4(at) = sw.addr() else {
        unreachable!()
    };
    let t = target(&spec);
    let mut a = Attacker::new(sw.addr(), &[t], Forger::new(&[t], 9, Vec::new()));
    if !a.has_raw() {
        println!("skipped: spoofing a lane's address needs CAP_NET_RAW");
        return;
    }
    let wrong_key = bytes_of(&Message::Join(
        JoinRepr {
            job: t.job,
            rank: 0,
            world: t.world,
            slot_lo: 0,
            slot_count: 16,
            count: 64,
            lanes: 2,
            nonce: 5,
            cookie: 0,
            tag: [0; 16],
        }
        .sign(KEY ^ 1),
    ));
    let probe = bytes_of(&Message::Probe(ProbeRepr {
        job: t.job,
        rank: 0,
        slot: 0,
        ver: 0,
        seq: 0,
        session: 0,
        flags: switchml_core::wire::ProbeFlags::NONE,
    }));
    // Each rank all-reduces on its own thread: the two must run at once.
    let addr = sw.addr();
    let run = move |rank: u16| {
        let comm = Communicator::connect(&config(rank, 2, addr)).map_err(|e| e.to_string())?;
        let mut x = ints(rank, 2, 1000, 1);
        comm.allreduce(&mut x, Op::Sum).map_err(|e| e.to_string())?;
        Ok::<_, String>(x == int_sum(2, 1000, 1))
    };
    let outcomes = std::thread::scope(|s| {
        // Rank 0 joins first and waits for rank 1: it is joining meanwhile.
        let rank0 = s.spawn(move || run(0));
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut lanes = Vec::new();
        while lanes.len() < 2 && std::time::Instant::now() < deadline {
            lanes = proc_udp::connected_to(at);
        }
        for lane in &lanes {
            a.send(&wrong_key, Via::Spoofed(lane.port()));
            a.send(&probe, Via::Spoofed(lane.port()));
        }
        // Rank 1 comes once the switch has answered them all (to rank 0's lanes).
        let refused =
            |c: &switchml_switchd::DaemonCounters| c.job(JOB).map_or(0, |j| j.switch.unauthorized);
        while refused(&sw.counters()) < a.tally.sent && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let rank1 = s.spawn(move || run(1));
        [rank0, rank1].map(|h| h.join().unwrap())
    });
    for (rank, o) in outcomes.into_iter().enumerate() {
        assert_eq!(o, Ok(true), "rank {rank}");
    }
}

on_both_pipelines!(a_refusal_spoofed_to_a_joining_lane_does_not_end_its_join);
