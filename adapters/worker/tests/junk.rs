//! More than 100,000 junk, truncated, foreign-job and forged datagrams thrown at the switch
//! while a job runs: every all-reduce stays exact, and every one of them is counted where
//! protocol.md §4 puts it (`common/fate.rs`). A forgery of the job's own traffic carries no
//! key and no session (protocol.md §4.1): a Contribution or an Abort is dropped as
//! `BadSession` and counted in the job's `unauthorized`, a Join is refused with `BadKey`.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::attacker::{Attacker, Via};
use common::forge::{bytes_of, contribution, Forger, FOREIGN_JOB};
use common::*;
use switchml_core::switch::DropReason;
use switchml_core::wire::{AbortReason, AbortRepr, JoinRepr, Message};
use switchml_switchd::RunningSwitch;
use switchml_worker::Op;

const WORLD: u16 = 3;
/// Datagrams of each of the four kinds.
const EACH: usize = 25_600;
/// Leaves that may reach the switch after the run ended (each rank's lanes each send one):
/// they too are refused for their session.
const LATE_LEAVES: u64 = WORLD as u64 * 2;

/// A Contribution of job `job`, rank `rank`, slot `slot` with `count` zeros, in `session`.
fn zeros(job: u16, rank: u16, slot: u16, seq: u32, count: u16, session: u32) -> Vec<u8> {
    contribution(
        job,
        rank,
        slot,
        seq,
        session,
        &vec![0; 4 * usize::from(count)],
    )
}

/// Send the four kinds, interleaved, from one socket, pacing by the switch's socket buffer
/// (`Attacker::pace`): a busy machine slows the junk down instead of overflowing the buffer,
/// where the kernel would drop datagrams before the switch could count them.
fn throw_junk(a: &mut Attacker, sw: &RunningSwitch) {
    let from = Via::Socket(0);
    for i in 0..EACH {
        let r = mix(i as u64);
        // Junk: random bytes of random length.
        let n = (r % 600) as usize;
        let junk: Vec<u8> = (0..n).map(|k| mix(r ^ k as u64) as u8).collect();
        a.send(&junk, from);
        // Truncated: a valid header of 64 values, cut short.
        let (rank, slot) = ((r % 3) as u16, (r % 32) as u16);
        let c = zeros(JOB, rank, slot, r as u32, 64, (r >> 32) as u32);
        a.send(&c[..c.len() - 1 - (r % 200) as usize], from);
        // Foreign job.
        a.send(&zeros(FOREIGN_JOB, 0, 0, r as u32, 64, 0), from);
        // Forged: the job's real ranks and slots in a guessed session; a third are Joins
        // with a guessed key, a third Aborts that try to end the run.
        let forged = match r % 3 {
            0 => zeros(JOB, rank, slot, r as u32, 64, (r >> 32) as u32),
            1 => bytes_of(&Message::Join(
                JoinRepr {
                    job: JOB,
                    rank,
                    world: WORLD,
                    slot_lo: 0,
                    slot_count: 16,
                    count: 64,
                    lanes: 2,
                    nonce: (r >> 32) as u32 | 1,
                    cookie: 0,
                    tag: [0; 16],
                }
                .sign(r ^ KEY.rotate_left(1)),
            )),
            _ => bytes_of(&Message::Abort(AbortRepr {
                job: JOB,
                rank,
                reason: AbortReason::WorkerFailed,
                detail: 0xFFFF,
                epoch: 0,
                session: (r >> 32) as u32,
            })),
        };
        a.send(&forged, from);
        if i % 16 == 15 {
            a.read_answers();
            a.pace();
        }
    }
    a.collect(Duration::from_secs(30), sw);
}

fn junk_truncated_foreign_and_forged_packets_are_dropped_and_counted(pipeline: SwitchPipeline) {
    let sw = switch(pipeline, WORLD, 32, 0.0, 0);
    let addr = sw.addr();
    let targets = [target(&job_spec(WORLD, 32))];
    let junk_running = AtomicBool::new(true);
    let joined = std::sync::Barrier::new(usize::from(WORLD) + 1);
    let (outcomes, mut a) = std::thread::scope(|s| {
        let junk = s.spawn(|| {
            joined.wait();
            let mut a = Attacker::new(addr, &targets, Forger::new(&targets, 0, Vec::new()));
            throw_junk(&mut a, &sw);
            junk_running.store(false, Ordering::Relaxed);
            a
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
                    if x != int_sum(WORLD, 2000, iteration) {
                        return Err(format!("iteration {iteration}: wrong sum"));
                    }
                    let mut more = [i32::from(junk_running.load(Ordering::Relaxed))];
                    comm.allreduce(&mut more, Op::Sum)
                        .map_err(|e| e.to_string())?;
                    if more[0] == 0 {
                        return Ok((iteration + 1, comm.stats().sent));
                    }
                }
                Err("the junk never finished".into())
            },
        );
        (outcomes, junk.join().unwrap())
    });
    let mut sent = 0;
    for (rank, o) in outcomes.into_iter().enumerate() {
        let (iterations, contributions) = o.unwrap().unwrap_or_else(|e| panic!("rank {rank}: {e}"));
        assert!(iterations >= 1);
        sent += contributions;
    }
    assert_eq!(
        a.tally.sent,
        4 * EACH as u64,
        "every junk datagram went out"
    );
    let std::net::SocketAddr::V4(at) = addr else {
        unreachable!()
    };
    let kernel_drops = proc_udp::socket_at(at).map_or(0, |s| s.drops);
    assert_eq!(
        kernel_drops, 0,
        "the kernel dropped datagrams at the switch"
    );
    let c = sw.stop().unwrap();
    a.read_answers();
    let tally = a.tally;
    let job = c.job(JOB).unwrap().switch;
    // One socket sent all of it: past its burst, the daemon drops what it sends unread
    // (`throttled`, the per-source junk limit) and answers it no more than its share
    // (`replies_limited`). Every forged Join was refused for its key to the sender, or its
    // answer held back, or the Join dropped unread; nothing else came back.
    assert!(tally.refusals(AbortReason::BadKey) >= EACH as u64 / 4);
    let never_decided = tally.check_answers(&c);
    // The job's ranks cause no drop but duplicates, stale resends and Leaves that come
    // after their run ended (BadSession): every other drop is junk, as predicted, less
    // what was throttled.
    let ranks = [
        (DropReason::Duplicate, u64::MAX),
        (DropReason::Stale, u64::MAX),
        (DropReason::BadSession, LATE_LEAVES),
    ];
    tally.check_drops(&c, &ranks, never_decided);
    assert!(tally.drops(DropReason::BadSession) >= EACH as u64 / 2);
    tally.check_unauthorized(JOB, job.unauthorized, c.throttled, LATE_LEAVES);
    // No forged Abort ended the run, and every contribution the switch handled is one the
    // ranks sent: counted, answered as a resend, or dropped as a duplicate or stale.
    assert_eq!((job.aborts, job.rejected, job.runs), (0, 0, 1), "{job:?}");
    let handled = job.contributions + job.retransmit_replies + job.duplicates + job.stale;
    assert_eq!(handled, sent, "{job:?}");
    assert_eq!(job.contributions, u64::from(WORLD) * job.completions);
}

fn a_datagram_longer_than_any_message_is_oversized_by_one_byte_already(pipeline: SwitchPipeline) {
    // The daemon's receive buffer was one byte longer than the longest message, so a
    // datagram of exactly that length was read whole and counted as `Malformed`.
    let sw = switch(pipeline, 2, 32, 0.0, 0);
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let longest = common::fate::LONGEST;
    for len in [longest, longest + 1, longest + 2, 3 * longest] {
        // Version 0: not a message whatever its length.
        s.send_to(&vec![0u8; len], sw.addr()).unwrap();
    }
    let c = settle(&sw);
    assert_eq!(c.switch.received, 4, "{c:?}");
    assert_eq!((c.oversized, c.switch.drops(DropReason::Oversized)), (3, 3));
    assert_eq!(c.switch.drops(DropReason::Malformed), 1);
}

on_both_pipelines!(
    junk_truncated_foreign_and_forged_packets_are_dropped_and_counted,
    a_datagram_longer_than_any_message_is_oversized_by_one_byte_already
);
