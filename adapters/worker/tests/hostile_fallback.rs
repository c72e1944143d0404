//! A stranger on loopback against the TCP fallback (issue 25, item 2). Before the
//! fallback was keyed, one Hello naming another job ended rank 0's rendezvous, one silent
//! connection failed the job, and a stranger who connected in an absent rank's place got
//! `allreduce` to return wrong sums as success. Now every connection proves the job key
//! both ways and every frame carries a tag (docs/fallback.md, "Frames and the handshake"):
//! what a stranger sends closes its own connection and nothing else, and the job either
//! completes with the exact sums when the real rank comes or fails naming the rank missing.
//!
//! The job runs on the ring from the start: the switch does not know it. Every test holds
//! [`SERIAL`], so that the only TCP listeners of this process are its own ranks' (one test
//! finds a rank's ring listener as a stranger on the host would, in /proc).

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use switchml_switchd::{JobSpec, RunningSwitch};
use switchml_worker::{CommConfig, Communicator, Error, FallbackStats, Op};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const WORLD: u16 = 2;
/// Elements of each tensor.
const LEN: usize = 1000;
/// Tensors each rank all-reduces.
const TENSORS: u64 = 2;
/// A fallback timeout for runs that should succeed: long, since they end as soon as the
/// ranks meet.
const PATIENT: Duration = Duration::from_secs(10);
/// A fallback timeout for runs that must fail: the error comes after it.
const BRIEF: Duration = Duration::from_secs(2);

/// A switch that does not know the job: the ranks fall back at connect.
fn switch_without_the_job() -> RunningSwitch {
    let other = JobSpec {
        id: JOB + 1,
        ..job_spec(WORLD, 64)
    };
    switch_serving(SwitchPipeline::Reference, &[other])
}

/// A loopback TCP address nothing listens at (bound and released).
fn free_tcp() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
}

fn with_fallback(rank: u16, sw: &RunningSwitch, at: SocketAddr, timeout: Duration) -> CommConfig {
    config(rank, WORLD, sw.addr())
        .into_builder()
        .fallback(at)
        .fallback_timeout(timeout)
        .join_timeout(Duration::from_secs(2))
        .build()
}

type Outcome = Result<(Vec<Vec<i32>>, FallbackStats), Error>;

/// Connect rank `config.rank` and all-reduce [`TENSORS`] i32 tensors, on a thread.
fn start_rank(config: CommConfig) -> JoinHandle<Outcome> {
    std::thread::spawn(move || {
        let comm = Communicator::connect(&config)?;
        let mut out = Vec::new();
        for t in 0..TENSORS {
            let mut x = ints(comm.rank(), WORLD, LEN, t);
            comm.allreduce(&mut x, Op::Sum)?;
            out.push(x);
        }
        Ok((out, comm.fallback_stats()))
    })
}

/// Both ranks finished every tensor with the exact sum, over the ring.
fn exact(outcomes: Vec<JoinHandle<Outcome>>) {
    let outcomes: Vec<Outcome> = outcomes.into_iter().map(|h| h.join().unwrap()).collect();
    for (rank, outcome) in outcomes.iter().enumerate() {
        let (out, stats) = match outcome {
            Ok(run) => run,
            Err(e) => {
                let all: Vec<String> = outcomes
                    .iter()
                    .map(|o| match o {
                        Ok(_) => "ok".into(),
                        Err(e) => e.to_string(),
                    })
                    .collect();
                panic!("rank {rank}: {e} (every rank: {all:?})")
            }
        };
        for (t, got) in out.iter().enumerate() {
            assert!(
                *got == int_sum(WORLD, LEN, t as u64),
                "rank {rank} tensor {t}: wrong sum"
            );
        }
        assert!(
            stats.active && stats.tensors == TENSORS,
            "rank {rank}: {stats:?}"
        );
    }
}

/// Connect to `at`, retrying while nothing listens there (at most 10 s).
fn connect_retry(at: SocketAddr) -> TcpStream {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match TcpStream::connect(at) {
            Ok(s) => return s,
            Err(e) if Instant::now() < until => {
                assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("nothing listens at {at}: {e}"),
        }
    }
}

/// Whether the other end closes `s` within 10 s (whatever it sends first is read).
fn closed_by_peer(s: &mut TcpStream) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buf = [0u8; 256];
    while Instant::now() < until {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true, // reset
        }
    }
    false
}

/// A Hello as the fallback sent it before it was keyed: the 24-byte header (magic
/// `SMLR`, kind 1, sender rank, tensor 0, payload length) and job, world and ring port.
fn unkeyed_hello(rank: u16, job: u16, port: u16) -> Vec<u8> {
    frame_unkeyed(
        1,
        rank,
        0,
        &[job, WORLD, port].map(u16::to_le_bytes).concat(),
    )
}

/// A frame in the unkeyed format: header and payload, no tag.
fn frame_unkeyed(kind: u8, rank: u16, tensor: u64, payload: &[u8]) -> Vec<u8> {
    let mut f = b"SMLR".to_vec();
    f.extend_from_slice(&[kind, 0]);
    f.extend_from_slice(&rank.to_le_bytes());
    f.extend_from_slice(&tensor.to_le_bytes());
    f.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

/// An opening of the keyed handshake (docs/fallback.md): magic `SMLH`, version 1, role
/// (1 rendezvous, 2 ring), job, world, from rank, to rank, a 16-byte nonce.
fn opening(role: u8, job: u16, from: u16, to: u16) -> Vec<u8> {
    let mut o = b"SMLH".to_vec();
    o.extend_from_slice(&[1, role]);
    for v in [job, WORLD, from, to] {
        o.extend_from_slice(&v.to_le_bytes());
    }
    o.extend_from_slice(&[0x5A; 16]);
    o
}

/// A stranger without the key who plays the keyed handshake as rank `from` to the end:
/// its opening is answered, its proof (a guess) is not, and the connection closes.
fn keyless_stranger(at: SocketAddr, role: u8, from: u16, to: u16) -> bool {
    let mut s = connect_retry(at);
    s.write_all(&opening(role, JOB, from, to)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut answer = [0u8; 36];
    if s.read_exact(&mut answer).is_err() {
        return closed_by_peer(&mut s);
    }
    // A guessed proof, then a Hello frame with a guessed tag.
    let _ = s.write_all(&[0xEE; 16 + 24 + 16 + 2]);
    closed_by_peer(&mut s)
}

/// Start rank `first`, let `attack` loose at the rendezvous address, start the other
/// rank: both must all-reduce the exact sums. Then run what `attack` returned (its checks;
/// the connections it holds stay open until then).
fn meet_despite<F: FnOnce()>(first: u16, attack: impl FnOnce(SocketAddr) -> F) {
    let _serial = serial();
    let sw = switch_without_the_job();
    let at = free_tcp();
    let early = start_rank(with_fallback(first, &sw, at, PATIENT));
    let after = attack(at);
    let late = start_rank(with_fallback(1 - first, &sw, at, PATIENT));
    exact(match first {
        0 => vec![early, late],
        _ => vec![late, early],
    });
    after();
    sw.stop().unwrap();
}

#[test]
fn a_hello_naming_another_job_closes_that_connection_and_the_ranks_still_meet() {
    meet_despite(0, |at| {
        // The attack as it was found (the unkeyed Hello), and an opening of the keyed
        // handshake for another job: each is closed, and rank 0 listens on.
        let mut old = connect_retry(at);
        old.write_all(&unkeyed_hello(1, JOB + 1, 9)).unwrap();
        assert!(closed_by_peer(&mut old), "the unkeyed Hello was left open");
        let mut other = connect_retry(at);
        other.write_all(&opening(1, JOB + 1, 1, 0)).unwrap();
        assert!(
            closed_by_peer(&mut other),
            "another job's opening was left open"
        );
        || {}
    });
}

#[test]
fn a_silent_or_trickling_connection_to_the_rendezvous_does_not_hold_it_up() {
    // The fallback timeout is the rendezvous's whole budget: a connection that could
    // hold rank 0 for it (as a blocking read with that timeout did) fails the job.
    meet_despite(0, |at| {
        let silent = connect_retry(at);
        let mut trickle = connect_retry(at);
        // One byte of an opening: the rest never comes.
        trickle.write_all(&opening(1, JOB, 1, 0)[..1]).unwrap();
        move || drop((silent, trickle))
    });
}

/// The ports of this process's TCP sockets listening on 0.0.0.0: what `ss -ltnp` shows a
/// stranger on the host.
fn wildcard_listeners() -> Vec<u16> {
    let mut ours = Vec::new();
    for fd in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        if let Ok(link) = std::fs::read_link(fd.path()) {
            let link = link.to_string_lossy().into_owned();
            if let Some(inode) = link
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
            {
                ours.push(inode.to_string());
            }
        }
    }
    let table = std::fs::read_to_string("/proc/self/net/tcp").unwrap();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (ip, port) = f.get(1)?.split_once(':')?;
            let listening = f.get(3) == Some(&"0A");
            (listening && ip == "00000000" && ours.iter().any(|i| Some(&i.as_str()) == f.get(9)))
                .then(|| u16::from_str_radix(port, 16).ok())
                .flatten()
        })
        .collect()
}

/// Rank 1's ring listener, found as a stranger finds it, while rank 1 waits for rank 0.
fn rank1_ring_listener() -> SocketAddr {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let [port] = wildcard_listeners()[..] {
            return SocketAddr::from(([127, 0, 0, 1], port));
        }
        assert!(
            Instant::now() < until,
            "rank 1's ring listener never showed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_silent_connection_to_a_ring_listener_does_not_hold_it_up() {
    // Rank 1 starts first: its ring listener is open while it waits for rank 0.
    meet_despite(1, |_| {
        let silent = connect_retry(rank1_ring_listener());
        move || drop(silent)
    });
}

#[test]
fn a_stranger_at_a_ring_listener_does_not_take_the_left_ranks_place() {
    meet_despite(1, |_| {
        let ring = rank1_ring_listener();
        // A stranger in rank 0's place (rank 1's left) speaking the unkeyed format: Hello
        // as rank 0, an empty record for the switch-to-ring transition, then zeros as rank
        // 0's share of each tensor (the reduce-scatter's partial sums, then the
        // all-gather's segment with "no overflow"). Before the fix, rank 1 took it for
        // rank 0 (and dropped its listener with the real rank 0's connection in it: the
        // job failed).
        let mut old = connect_retry(ring);
        let half = LEN / 2;
        let mut gather = u64::MAX.to_le_bytes().to_vec();
        gather.extend(vec![0u8; half * 4]);
        let mut forged = unkeyed_hello(0, JOB, 9);
        forged.extend(frame_unkeyed(3, 0, u64::MAX, &[0u8; 24]));
        for t in 0..TENSORS {
            forged.extend(frame_unkeyed(4, 0, t, &vec![0u8; half * 8]));
            forged.extend(frame_unkeyed(5, 0, t, &gather));
        }
        old.write_all(&forged).unwrap();
        // And one that plays the keyed handshake without the key.
        let keyed = std::thread::spawn(move || keyless_stranger(ring, 2, 0, 1));
        move || {
            assert!(
                closed_by_peer(&mut old),
                "the unkeyed stranger was left open"
            );
            assert!(keyed.join().unwrap(), "the keyless stranger was left open");
        }
    });
}

#[test]
fn a_stranger_in_an_absent_ranks_place_is_refused_and_the_real_rank_still_gets_in() {
    meet_despite(0, |at| {
        let mut old = connect_retry(at);
        old.write_all(&unkeyed_hello(1, JOB, 9)).unwrap();
        assert!(closed_by_peer(&mut old), "the unkeyed Hello was left open");
        assert!(
            keyless_stranger(at, 1, 1, 0),
            "the keyless stranger was left open"
        );
        || {}
    });
}

/// Rank 0 returned no sum, but the rendezvous's timeout naming rank 1 as missing.
fn rank1_named_missing(rank0: JoinHandle<Outcome>) {
    let e = rank0
        .join()
        .unwrap()
        .map(|_| "a sum")
        .expect_err("rank 0 met nobody: no sum");
    assert!(
        matches!(e, Error::Timeout { .. }) && e.to_string().contains("ranks [1]"),
        "{e}"
    );
}

#[test]
fn a_stranger_in_an_absent_ranks_place_never_makes_a_sum_the_job_fails_naming_the_rank() {
    let _serial = serial();
    let sw = switch_without_the_job();
    let at = free_tcp();
    let rank0 = start_rank(with_fallback(0, &sw, at, BRIEF));
    // Before the fix, this Hello took rank 1's place: rank 0 then met "rank 1" at port 9.
    let mut old = connect_retry(at);
    old.write_all(&unkeyed_hello(1, JOB, 9)).unwrap();
    let keyed = std::thread::spawn(move || keyless_stranger(at, 1, 1, 0));
    rank1_named_missing(rank0);
    assert!(keyed.join().unwrap(), "the keyless stranger was left open");
    sw.stop().unwrap();
}

/// A TCP relay from `front` to `to`: what goes from `to` back to the connecting side
/// passes through `edit`; the bytes the connecting side sent are recorded.
fn relay(
    front: TcpListener,
    to: SocketAddr,
    edit: impl Fn(usize, &mut [u8]) + Send + 'static,
) -> Arc<Mutex<Vec<u8>>> {
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let rec = Arc::clone(&recorded);
    std::thread::spawn(move || {
        let Ok((mut near, _)) = front.accept() else {
            return;
        };
        let mut far = connect_retry(to);
        let (mut near2, mut far2) = (near.try_clone().unwrap(), far.try_clone().unwrap());
        for s in [&near, &far] {
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        }
        let up = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = near2.read(&mut buf) {
                rec.lock().unwrap().extend_from_slice(&buf[..n]);
                if far2.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = far2.shutdown(std::net::Shutdown::Write);
        });
        let (mut buf, mut at) = ([0u8; 4096], 0);
        while let Ok(n @ 1..) = far.read(&mut buf) {
            edit(at, &mut buf[..n]);
            at += n;
            if near.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = near.shutdown(std::net::Shutdown::Write);
        let _ = up.join();
    });
    recorded
}

#[test]
fn a_tampered_table_is_rejected_and_no_rank_returns_a_sum() {
    let _serial = serial();
    let sw = switch_without_the_job();
    let at = free_tcp();
    let front = TcpListener::bind("127.0.0.1:0").unwrap();
    let via = front.local_addr().unwrap();
    // Rank 0's answer (36 bytes), then the Table frame: 24-byte header, 16-byte tag, and
    // the entries (16-byte address, 2-byte port); flip the low byte of rank 0's port.
    let port_of_rank0: usize = 36 + 24 + 16 + 16;
    relay(front, at, move |from, bytes| {
        if let Some(b) = port_of_rank0
            .checked_sub(from)
            .and_then(|i| bytes.get_mut(i))
        {
            *b ^= 1;
        }
    });
    let rank0 = start_rank(with_fallback(0, &sw, at, BRIEF));
    let rank1 = start_rank(
        with_fallback(1, &sw, at, BRIEF)
            .into_builder()
            .fallback(via)
            .build(),
    );
    let e1 = rank1
        .join()
        .unwrap()
        .map(|_| "a sum")
        .expect_err("rank 1 took the table");
    assert!(e1.to_string().contains("integrity check"), "{e1}");
    let e0 = rank0
        .join()
        .unwrap()
        .map(|_| "a sum")
        .expect_err("rank 0 made a sum alone");
    assert!(e0.to_string().contains("rank 1"), "{e0}");
    sw.stop().unwrap();
}

#[test]
fn a_recorded_rendezvous_replayed_later_does_not_take_the_ranks_place() {
    let _serial = serial();
    let sw = switch_without_the_job();
    // A run through a relay that records what rank 1 sends to rank 0.
    let at = free_tcp();
    let front = TcpListener::bind("127.0.0.1:0").unwrap();
    let via = front.local_addr().unwrap();
    let recorded = relay(front, at, |_, _| {});
    let rank0 = start_rank(with_fallback(0, &sw, at, PATIENT));
    let rank1 = start_rank(
        with_fallback(1, &sw, at, PATIENT)
            .into_builder()
            .fallback(via)
            .build(),
    );
    exact(vec![rank0, rank1]);
    let recorded = recorded.lock().unwrap().clone();
    assert!(!recorded.is_empty(), "the relay saw rank 1's rendezvous");
    // A later run of the same job, rank 1 absent: the recording, replayed to rank 0.
    let at = free_tcp();
    let rank0 = start_rank(with_fallback(0, &sw, at, BRIEF));
    let mut replay = connect_retry(at);
    replay.write_all(&recorded).unwrap();
    rank1_named_missing(rank0);
    assert!(closed_by_peer(&mut replay), "the replay was left open");
    sw.stop().unwrap();
}
