//! More than 100,000 junk, truncated, foreign-job and spoofed datagrams thrown at the switch
//! while a job runs: every all-reduce stays exact and the switch counts them as drops.

mod common;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;
use switchml_core::wire::{
    AbortPacket, AbortReason, AbortRepr, DataKind, DataPacket, DataRepr, Flags, JoinPacket,
    JoinRepr,
};
use switchml_udp::Op;

const WORLD: u16 = 3;
/// Datagrams of each of the four kinds.
const EACH: usize = 25_600;

/// Write a Contribution of job `job`, rank `rank`, slot `slot` with `count` values.
fn contribution(buf: &mut [u8], job: u16, rank: u16, slot: u16, seq: u32, count: u16) -> usize {
    let repr = DataRepr {
        kind: DataKind::Contribution,
        job,
        rank,
        slot,
        ver: (seq & 1) as u8,
        flags: Flags::default(),
        count,
        seq,
        exp: 0,
    };
    let len = repr.buffer_len();
    repr.emit(&mut DataPacket::new_unchecked(&mut buf[..len]));
    len
}

/// Send the four kinds, interleaved, in bursts paced by the switch itself: after each burst,
/// wait (bounded) until its drop counter has caught up with what was sent, so that a busy
/// machine slows the junk down instead of overflowing the switch's socket buffer, where
/// the kernel would drop datagrams before the switch could count them.
fn throw_junk(to: std::net::SocketAddr, drops: impl Fn() -> u64) -> usize {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(to).unwrap();
    let mut buf = vec![0u8; 2048];
    let mut sent = 0;
    for i in 0..EACH {
        let r = mix(i as u64);
        // Junk: random bytes of random length.
        let n = (r % 600) as usize;
        for (k, b) in buf[..n].iter_mut().enumerate() {
            *b = mix(r ^ k as u64) as u8;
        }
        sent += usize::from(s.send(&buf[..n]).is_ok());
        // Truncated: a valid header of 64 values, cut short.
        let len = contribution(&mut buf, JOB, (r % 3) as u16, (r % 32) as u16, r as u32, 64);
        sent += usize::from(s.send(&buf[..len - 1 - (r % 200) as usize]).is_ok());
        // Foreign job.
        let len = contribution(&mut buf, 999, 0, 0, r as u32, 64);
        sent += usize::from(s.send(&buf[..len]).is_ok());
        // Spoofed: the job's real ranks and slots, from the wrong address; a third are
        // Joins that try to move a lane, and Aborts that try to kill the job.
        let len = match r % 3 {
            0 => contribution(&mut buf, JOB, (r % 3) as u16, (r % 32) as u16, r as u32, 64),
            1 => {
                let j = JoinRepr {
                    job: JOB,
                    rank: (r % 3) as u16,
                    world: WORLD,
                    slot_lo: 0,
                    slot_count: 16,
                    count: 64,
                };
                j.emit(&mut JoinPacket::new_unchecked(&mut buf[..j.buffer_len()]));
                j.buffer_len()
            }
            _ => {
                let a = AbortRepr {
                    job: JOB,
                    rank: (r % 3) as u16,
                    reason: AbortReason::WorkerFailed,
                    detail: 0xFFFF,
                    epoch: 0,
                };
                a.emit(&mut AbortPacket::new_unchecked(&mut buf[..a.buffer_len()]));
                a.buffer_len()
            }
        };
        sent += usize::from(s.send(&buf[..len]).is_ok());
        if i % 64 == 63 {
            // At most LAG datagrams in flight: well inside the switch's socket buffer, and
            // enough that the 50 ms-old published counters rarely hold the sender up.
            const LAG: u64 = 2048;
            let deadline = std::time::Instant::now() + Duration::from_secs(2);
            while drops() + LAG < sent as u64 && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(500));
            }
        }
    }
    sent
}

#[test]
fn junk_truncated_foreign_and_spoofed_packets_are_dropped_and_counted() {
    let sw = switch(WORLD, 32, 0.0, 0);
    let addr = sw.addr();
    let junk_running = AtomicBool::new(true);
    let joined = std::sync::Barrier::new(usize::from(WORLD) + 1);
    let (outcomes, sent) = std::thread::scope(|s| {
        let junk = s.spawn(|| {
            joined.wait();
            let sent = throw_junk(addr, || sw.counters().total_drops());
            junk_running.store(false, Ordering::Relaxed);
            sent
        });
        let outcomes = per_rank(
            WORLD,
            |r| config(r, WORLD, addr),
            |comm| {
                joined.wait();
                let r = comm.rank();
                // Go on until every rank has seen the junk finish (agreed by an all-reduce).
                for iteration in 0..10_000u64 {
                    let mut x = ints(r, WORLD, 2000, iteration);
                    comm.allreduce(&mut x, Op::Sum).map_err(|e| e.to_string())?;
                    let inputs: Vec<Vec<i32>> = (0..WORLD)
                        .map(|q| ints(q, WORLD, 2000, iteration))
                        .collect();
                    let expect: Vec<i32> = (0..2000)
                        .map(|i| inputs.iter().fold(0i32, |s, v| s.wrapping_add(v[i])))
                        .collect();
                    if x != expect {
                        return Err(format!("iteration {iteration}: wrong sum"));
                    }
                    let mut more = [i32::from(junk_running.load(Ordering::Relaxed))];
                    comm.allreduce(&mut more, Op::Sum)
                        .map_err(|e| e.to_string())?;
                    if more[0] == 0 {
                        return Ok(iteration + 1);
                    }
                }
                Err("the junk never finished".into())
            },
        );
        (outcomes, junk.join().unwrap())
    });
    for (rank, o) in outcomes.into_iter().enumerate() {
        let iterations = o.unwrap().unwrap_or_else(|e| panic!("rank {rank}: {e}"));
        assert!(iterations >= 1);
    }
    assert!(sent >= 100_000, "only {sent} junk datagrams sent");
    let c = sw.stop().unwrap();
    let job = *c.job(JOB).unwrap();
    let spoofed = EACH as u64; // every fourth datagram
                               // Loopback does not lose datagrams at this pace; allow 1 % for a busy machine.
    let at_least = |n: u64| n * 99 / 100;
    assert!(
        job.spoofed >= at_least(spoofed),
        "spoofed {} of {spoofed}",
        job.spoofed
    );
    assert!(
        c.total_drops() >= at_least(sent as u64),
        "drops {} of {sent}",
        c.total_drops()
    );
    use switchml_core::switch::DropReason;
    let idx = |r: DropReason| switchml_udp::traffic::reason_index(r);
    assert!(c.unattributed[idx(DropReason::UnknownJob)] >= at_least(EACH as u64));
    assert!(job.dropped[idx(DropReason::Malformed)] >= at_least(EACH as u64));
    assert!(c.unattributed[idx(DropReason::Malformed)] > 0);
}
