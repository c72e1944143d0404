//! Issue 25, items 1 and 3, as an attacker on loopback did them, now closed (protocol.md
//! §4.2):
//!
//! - one ProbeReply naming another epoch, sent from the switch's address to a running
//!   worker's port, ended the worker ("the switch restarted"): a ProbeReply must now name
//!   the worker's run;
//! - a captured Join replayed from another address moved the rank's lanes there (the
//!   replayer got the session and the Results); now its cookie names the address it was
//!   issued to;
//! - a Join captured in an earlier run, replayed once — even from its own address — ended
//!   the current run ("rank 0 restarted"); now its cookie names the run.
//!
//! Spoofing the switch's or a lane's address needs raw sockets (`CAP_NET_RAW`); without them
//! those tests say so and pass.

mod common;

use std::collections::HashMap;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::forge::bytes_of;
use common::proc_udp::connected_to;
use common::raw_udp::RawUdp;
use common::*;
use switchml_core::wire::{JoinPacket, Message, MessageType, ProbeReplyRepr, SlotState};
use switchml_switchd::RunningSwitch;
use switchml_worker::{CommConfig, Communicator, Op};

const WORLD: u16 = 3;
const LEN: usize = 20_000;
const ROUNDS: u64 = 12;

/// A rank all-reduces `ROUNDS` tensors; whether every sum was exact.
fn rounds(config: &CommConfig) -> Result<bool, String> {
    let comm = Communicator::connect(config).map_err(|e| e.to_string())?;
    let mut exact = true;
    for round in 0..ROUNDS {
        let mut x = ints(config.rank, WORLD, LEN, round);
        comm.allreduce(&mut x, Op::Sum).map_err(|e| e.to_string())?;
        exact &= x == int_sum(WORLD, LEN, round);
    }
    Ok(exact)
}

fn a_forged_probe_reply_to_every_lane_ends_no_rank(pipeline: SwitchPipeline) {
    let sw = switch(pipeline, WORLD, 32, 0.0, 0);
    let SocketAddr::V4(at) = sw.addr() else {
        unreachable!("the test switch listens on IPv4 loopback")
    };
    let Some(raw) = RawUdp::open().expect("raw socket") else {
        println!("skipped: spoofing the switch's address needs CAP_NET_RAW");
        return;
    };
    let addr = sw.addr();
    let outcomes = std::thread::scope(|s| {
        let ranks: Vec<_> = (0..WORLD)
            .map(|r| s.spawn(move || rounds(&config(r, WORLD, addr))))
            .collect();
        // Every lane of every rank: two lanes each, all connected to the switch.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut lanes = Vec::new();
        while lanes.len() < 2 * usize::from(WORLD) && Instant::now() < deadline {
            lanes = connected_to(at);
        }
        // What the attacker of issue 25 sent: for each lane, as each rank, a ProbeReply of
        // another epoch and a made-up session, from the switch's address; again and again
        // while the ranks run.
        let mut forged = 0u32;
        while !ranks.iter().all(|h| h.is_finished()) && Instant::now() < deadline {
            for lane in &lanes {
                for rank in 0..WORLD {
                    forged = forged.wrapping_add(1);
                    let reply = ProbeReplyRepr {
                        job: JOB,
                        rank,
                        slot: 0,
                        ver: 0,
                        state: SlotState::Complete,
                        remaining: 0,
                        seq: 0,
                        epoch: 0xE90C_0000 ^ forged,
                        world: WORLD,
                        session: mix(u64::from(forged)) as u32,
                        seen: &[0xFF],
                    };
                    let _ = raw.send(at.port(), *lane, &bytes_of(&Message::ProbeReply(reply)));
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(forged > 0, "no lane found to attack");
        ranks
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    for (rank, o) in outcomes.into_iter().enumerate() {
        assert_eq!(o, Ok(true), "rank {rank}");
    }
}

/// A Join as it went to the switch, and the address it went from.
type Seen = (Vec<u8>, SocketAddrV4);

/// A UDP relay in front of the switch that records every Join it passes on, with the
/// address it sent it from.
struct Tap {
    front: SocketAddr,
    joins: Arc<Mutex<Vec<Seen>>>,
}

impl Tap {
    fn start(switch: SocketAddr) -> Tap {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = front.local_addr().unwrap();
        let joins = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&joins);
        std::thread::spawn(move || {
            let mut back: HashMap<SocketAddr, UdpSocket> = HashMap::new();
            let mut buf = [0u8; 65536];
            while let Ok((n, from)) = front.recv_from(&mut buf) {
                let b = back.entry(from).or_insert_with(|| {
                    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
                    b.connect(switch).unwrap();
                    let (answers, to) = (b.try_clone().unwrap(), front.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 65536];
                        while let Ok(n) = answers.recv(&mut buf) {
                            let _ = to.send_to(&buf[..n], from);
                        }
                    });
                    b
                });
                if n == switchml_core::wire::join::LEN
                    && switchml_core::wire::peek(&buf[..n]).is_ok_and(|p| p.0 == MessageType::Join)
                {
                    if let SocketAddr::V4(via) = b.local_addr().unwrap() {
                        seen.lock().unwrap().push((buf[..n].to_vec(), via));
                    }
                }
                let _ = b.send(&buf[..n]);
            }
        });
        Tap { front: addr, joins }
    }

    /// The last Join rank `rank` sent with a cookie (the one the switch took), and where from.
    fn taken_join(&self, rank: u16) -> Option<Seen> {
        let joins = self.joins.lock().unwrap();
        joins
            .iter()
            .rev()
            .find(|(b, _)| {
                let j = JoinPacket::new_unchecked(&b[..]);
                j.rank() == rank && j.cookie() != 0
            })
            .cloned()
    }
}

/// One run of the job: rank 0 through `tap`, the others straight; while it runs, `attack`.
fn run_with(sw: &RunningSwitch, tap: &Tap, attack: impl FnOnce()) -> Vec<Result<bool, String>> {
    let addr = sw.addr();
    let front = tap.front;
    let joins = |sw: &RunningSwitch| sw.counters().job(JOB).map_or(0, |j| j.switch.joins);
    let before = joins(sw);
    std::thread::scope(|s| {
        let ranks: Vec<_> = (0..WORLD)
            .map(|r| {
                let to = if r == 0 { front } else { addr };
                s.spawn(move || rounds(&config(r, WORLD, to)))
            })
            .collect();
        // Attack once every lane of every rank has joined this run.
        let deadline = Instant::now() + Duration::from_secs(10);
        while joins(sw) < before + 2 * u64::from(WORLD) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        attack();
        ranks.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn a_captured_join_replayed_elsewhere_or_later_takes_nothing(pipeline: SwitchPipeline) {
    let sw = switch(pipeline, WORLD, 32, 0.0, 0);
    let tap = Tap::start(sw.addr());
    // Run 1, undisturbed: rank 0's Joins are captured on the way.
    let first = run_with(&sw, &tap, || {});
    assert!(first.iter().all(|o| *o == Ok(true)), "{first:?}");
    let (captured, via) = tap.taken_join(0).expect("rank 0's Join with its cookie");

    // Run 2: the captured Join, replayed from another address while the run goes on. It
    // used to move rank 0's lane there: the replayer got JoinReplies and Results.
    let replayer = UdpSocket::bind("127.0.0.1:0").unwrap();
    replayer
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let second = run_with(&sw, &tap, || {
        replayer.send_to(&captured, sw.addr()).unwrap();
    });
    assert!(second.iter().all(|o| *o == Ok(true)), "{second:?}");
    let mut buf = [0u8; 65536];
    let mut got = Vec::new();
    while let Ok(n) = replayer.recv(&mut buf) {
        got.push(Message::parse(&buf[..n]).map(|m| m.msg_type()));
    }
    assert_eq!(
        got,
        [Ok(MessageType::Cookie)],
        "the replayer gets a Cookie and nothing of the run"
    );

    // Run 3: the captured Join (of run 1) replayed once from its own address. It used to
    // end the run: a new nonce for rank 0 of a complete run is a restarted rank.
    let Some(raw) = RawUdp::open().expect("raw socket") else {
        println!("skipped the same-address replay: it needs CAP_NET_RAW");
        return;
    };
    let SocketAddr::V4(at) = sw.addr() else {
        unreachable!()
    };
    let third = run_with(&sw, &tap, || {
        raw.send(via.port(), at, &captured).unwrap();
    });
    assert!(third.iter().all(|o| *o == Ok(true)), "{third:?}");
    let c = sw.counters();
    assert_eq!(c.job(JOB).unwrap().switch.aborts, 0, "{c:?}");
    assert_eq!(c.job(JOB).unwrap().switch.runs, 3, "{c:?}");
}

/// Issue 25, item 5: a Join or a Probe of a job the switch does not have was answered and
/// counted nowhere but `received`.
fn datagrams_of_an_unknown_job_are_counted(pipeline: SwitchPipeline) {
    let sw = switch(pipeline, WORLD, 32, 0.0, 0);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let join = switchml_core::wire::JoinRepr {
        job: JOB + 90,
        rank: 0,
        world: WORLD,
        slot_lo: 0,
        slot_count: 16,
        count: 64,
        lanes: 2,
        nonce: 7,
        cookie: 0,
        tag: [0; 16],
    };
    let probe = switchml_core::wire::ProbeRepr {
        job: JOB + 90,
        rank: 0,
        slot: 0,
        ver: 0,
        seq: 0,
        session: 9,
        flags: switchml_core::wire::ProbeFlags::NONE,
    };
    s.send_to(&bytes_of(&Message::Join(join.sign(KEY))), sw.addr())
        .unwrap();
    s.send_to(&bytes_of(&Message::Probe(probe)), sw.addr())
        .unwrap();
    let c = counters_when(&sw, |c| c.received >= 2);
    assert_eq!(c.unknown_job, 2, "{c:?}");
    assert_eq!(c.jobs.iter().map(|j| j.received).sum::<u64>(), 0);
}

on_both_pipelines!(
    datagrams_of_an_unknown_job_are_counted,
    a_forged_probe_reply_to_every_lane_ends_no_rank,
    a_captured_join_replayed_elsewhere_or_later_takes_nothing,
);
