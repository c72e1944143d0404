//! What `switchml doctor` asks the switch: a Status for a job, answered by a StatusReply with
//! the job's counters, flags and joined ranks (protocol.md §3.7–§3.8).

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use switchml_core::switch::DropReason;
use switchml_core::wire::{Message, StatusCounters, StatusFlags, StatusRepr};

use super::fate::class;
use super::forge::bytes_of;

/// A StatusReply, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// `ALL_JOINED`, `RUN_OPEN`.
    pub flags: StatusFlags,
    /// The job's counters and the switch's drops.
    pub counters: StatusCounters,
    /// The joined bitmap of the current run.
    pub joined: Vec<u8>,
}

impl Status {
    /// Return whether the job has a run open.
    pub fn run_open(&self) -> bool {
        self.flags.contains(StatusFlags::RUN_OPEN)
    }

    /// Return the job's Joins refused for their key: its unauthorized messages less those
    /// dropped for their session (switch-wide, so with one job only).
    pub fn refused_joins(&self) -> u64 {
        let bad_session = self.counters.drops[class(DropReason::BadSession)];
        self.counters.unauthorized - bad_session
    }

    /// Return whether no rank has joined the current run.
    pub fn nobody_joined(&self) -> bool {
        self.joined.iter().all(|b| *b == 0)
    }
}

/// Ask the switch at `switch` about job `job`, whose key is [`super::KEY`] (three tries, a
/// second each).
pub fn status(switch: SocketAddr, job: u16) -> Status {
    status_keyed(switch, job, super::KEY)
}

/// Ask the switch at `switch` about job `job` with key `key`, taking the Cookie it answers
/// first (protocol.md §4.2).
pub fn status_keyed(switch: SocketAddr, job: u16, key: u64) -> Status {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let ask = |cookie| {
        let q = StatusRepr {
            job,
            rank: 0,
            nonce: 0x5EED,
            cookie,
            tag: [0; 16],
        };
        bytes_of(&Message::Status(q.sign(key)))
    };
    let mut cookie = 0;
    let mut buf = [0u8; 1024];
    for _ in 0..6 {
        s.send_to(&ask(cookie), switch).unwrap();
        let Ok(n) = s.recv(&mut buf) else { continue };
        match Message::parse(&buf[..n]) {
            Ok(Message::Cookie(c)) if c.job == job && c.nonce == 0x5EED => cookie = c.cookie,
            Ok(Message::StatusReply(r)) if r.job == job => {
                return Status {
                    flags: r.flags,
                    counters: r.counters,
                    joined: r.joined.to_vec(),
                }
            }
            other => panic!("job {job}: the switch answered a Status with {other:?}"),
        }
    }
    panic!("job {job}: no StatusReply")
}

/// Ask until `wanted` holds of the answer (at most 5 s); return the last answer.
pub fn status_when(switch: SocketAddr, job: u16, wanted: impl Fn(&Status) -> bool) -> Status {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = status(switch, job);
        if wanted(&s) || Instant::now() >= deadline {
            return s;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
