//! The accepting side of the fallback's handshakes ([`crate::link`]): rank 0's rendezvous
//! and every rank's ring listener take connections here until the ranks they wait for have
//! proved the job key.
//!
//! Anyone who can reach the port can connect, so no connection may hold up another: the
//! gate never blocks on one. It polls the listener and every connection in its handshake
//! without blocking, gives each connection [`HANDSHAKE`] (at most the fallback timeout) to
//! finish, and closes the one that does not, that names another job, world, rank or role,
//! that is malformed or that fails its tag, counting and logging it (rate-limited), while
//! the others go on. At most [`MAX_PENDING`] handshakes run at once; past that the oldest
//! is closed to make room, so a flood of idle connections cannot keep a rank out for
//! longer than it takes that rank to connect again.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::config::RingConfig;
use crate::link::{
    answer, proof_holds, Kind, Link, Opening, Refusal, Role, Transcript, FRAME_HEAD_LEN, HANDSHAKE,
    HELLO_LEN, OPENING_LEN, PROOF_LEN,
};
use switchml_core::wire::ring_payload::parse_hello;
use switchml_udp::log_limit::{LogLimit, BURST, WINDOW};

/// Handshakes in progress at once, at most.
pub(crate) const MAX_PENDING: usize = 64;
/// How long the gate sleeps when nothing moved.
const IDLE: Duration = Duration::from_millis(2);

/// A rank that proved the job key.
pub(crate) struct Arrival {
    pub(crate) rank: u16,
    pub(crate) link: Link,
    /// Its ring port (from its Hello frame).
    pub(crate) port: u16,
    /// Its address, as this rank sees it.
    pub(crate) addr: SocketAddr,
}

/// What the gate did, for the caller's error and stats.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    /// Connections closed without an arrival.
    pub(crate) refused: u64,
    /// Why the last one was closed.
    pub(crate) last_refusal: Option<String>,
}

/// A connection in its handshake.
struct Pending {
    stream: TcpStream,
    addr: SocketAddr,
    until: Instant,
    buf: Vec<u8>,
    /// The opening and transcript, once the answer is sent.
    answered: Option<(Opening, Transcript)>,
}

/// What one poll of a pending connection came to.
enum Step {
    Waiting,
    Arrived(Box<Arrival>),
    Refused(String),
}

impl Gate {
    /// Accept connections on `listener` for `role` until every rank in `wanted` has
    /// arrived (the latest arrival of a rank counts); return them in `wanted`'s order, or
    /// the ranks still missing at `deadline`.
    pub(crate) fn gather(
        &mut self,
        listener: &TcpListener,
        config: &RingConfig,
        role: Role,
        wanted: &[u16],
        deadline: Instant,
    ) -> Result<Vec<Arrival>, Vec<u16>> {
        let mut arrived: Vec<Option<Arrival>> = wanted.iter().map(|_| None).collect();
        let mut pending: Vec<Pending> = Vec::new();
        let mut log = LogLimit::new(BURST, WINDOW);
        let missing = |arrived: &[Option<Arrival>]| -> Vec<u16> {
            wanted
                .iter()
                .zip(arrived)
                .filter(|(_, a)| a.is_none())
                .map(|(&r, _)| r)
                .collect()
        };
        if listener.set_nonblocking(true).is_err() {
            return Err(missing(&arrived));
        }
        let per_connection = HANDSHAKE.min(config.timeout);
        loop {
            let now = Instant::now();
            let mut moved = false;
            // Every connection waiting in the backlog.
            while let Ok((stream, addr)) = listener.accept() {
                moved = true;
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                // The oldest is the one closest to its handshake deadline.
                let oldest = (0..pending.len()).min_by_key(|&i| pending[i].until);
                if let (true, Some(i)) = (pending.len() >= MAX_PENDING, oldest) {
                    let old = pending.swap_remove(i);
                    self.refuse(
                        &mut log,
                        config,
                        role,
                        old.addr,
                        "too many handshakes at once",
                    );
                }
                pending.push(Pending {
                    stream,
                    addr,
                    until: now + per_connection,
                    buf: Vec::new(),
                    answered: None,
                });
            }
            let mut i = 0;
            while i < pending.len() {
                match pending[i].step(config, role, wanted, now) {
                    Step::Waiting => i += 1,
                    Step::Refused(why) => {
                        moved = true;
                        let p = pending.swap_remove(i);
                        self.refuse(&mut log, config, role, p.addr, &why);
                    }
                    Step::Arrived(a) => {
                        moved = true;
                        pending.swap_remove(i);
                        if let Some(slot) = wanted.iter().position(|&r| r == a.rank) {
                            arrived[slot] = Some(*a);
                        }
                    }
                }
            }
            if arrived.iter().all(Option::is_some) {
                return Ok(arrived.into_iter().flatten().collect());
            }
            if now >= deadline {
                return Err(missing(&arrived));
            }
            if !moved {
                std::thread::sleep(IDLE.min(deadline.saturating_duration_since(now)));
            }
        }
    }

    fn refuse(
        &mut self,
        log: &mut LogLimit,
        config: &RingConfig,
        role: Role,
        from: SocketAddr,
        why: &str,
    ) {
        self.refused += 1;
        self.last_refusal = Some(format!("{from}: {why}"));
        if let Some(held_back) = log.check(Instant::now()) {
            log::warn!(
                "rank {}: fallback {}: closed a connection from {from}: {why} \
                 ({} closed so far, {held_back} not logged)",
                config.rank,
                role.name(),
                self.refused
            );
        }
    }
}

impl Pending {
    /// Read what has come, and answer or finish the handshake when a message is whole.
    fn step(&mut self, config: &RingConfig, role: Role, wanted: &[u16], now: Instant) -> Step {
        let need = match self.answered {
            None => OPENING_LEN,
            Some(_) => PROOF_LEN + FRAME_HEAD_LEN + HELLO_LEN,
        };
        // Never more than this message: what follows it stays in the socket for the link.
        let mut chunk = [0u8; PROOF_LEN + FRAME_HEAD_LEN + HELLO_LEN];
        while self.buf.len() < need {
            let want = need - self.buf.len();
            match self.stream.read(&mut chunk[..want]) {
                Ok(0) => return Step::Refused("closed during the handshake".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if now >= self.until {
                        return Step::Refused(format!(
                            "no handshake in time ({} bytes of the next message came)",
                            self.buf.len()
                        ));
                    }
                    return Step::Waiting;
                }
                Err(e) => return Step::Refused(format!("reading the handshake: {e}")),
            }
        }
        match self.answered {
            None => self.answer(config, role, wanted),
            Some((opening, t)) => self.finish(config, &opening, &t),
        }
    }

    /// The opening is whole: check that it is for this rank, and answer it.
    fn answer(&mut self, config: &RingConfig, role: Role, wanted: &[u16]) -> Step {
        let Some(o) = Opening::parse(&self.buf) else {
            return Step::Refused("not a fallback handshake".into());
        };
        match o.check_for(role, config.job, config.world, config.rank, wanted) {
            Ok(()) => {}
            Err(Refusal::Role) => {
                return Step::Refused(format!("an opening for role {} here", u8::from(o.role)))
            }
            Err(Refusal::NotForThisRank) => {
                return Step::Refused(format!(
                    "an opening for rank {} of job {} with {} ranks (this is rank {} of job {} \
                     with {})",
                    o.to, o.job, o.world, config.rank, config.job, config.world
                ))
            }
            Err(Refusal::NotAwaited) => {
                return Step::Refused(format!("an opening from rank {}, not awaited here", o.from))
            }
        }
        let (bytes, t) = answer(config.key, &o);
        // A fresh connection's send buffer takes these few bytes at once; one that does
        // not is not worth waiting for.
        match self.stream.write(&bytes) {
            Ok(n) if n == bytes.len() => {}
            _ => return Step::Refused("the answer could not be sent".into()),
        }
        self.buf.clear();
        self.answered = Some((o, t));
        Step::Waiting
    }

    /// The proof and the Hello frame are whole: check them.
    fn finish(&mut self, config: &RingConfig, o: &Opening, t: &Transcript) -> Step {
        let (proof, frame) = self.buf.split_at(PROOF_LEN);
        if !proof_holds(config.key, t, proof) {
            return Step::Refused(format!(
                "a connection claiming rank {} did not prove the job key",
                o.from
            ));
        }
        // A second descriptor of the same socket: this one closes with the pending entry.
        let Ok(stream) = self.stream.try_clone() else {
            return Step::Refused("the socket could not be kept".into());
        };
        let mut link = Link::new(stream, config.key, *t, false, o.from);
        let mut head = [0u8; FRAME_HEAD_LEN];
        head.copy_from_slice(&frame[..FRAME_HEAD_LEN]);
        let hello = &frame[FRAME_HEAD_LEN..];
        let checked = Link::payload_len(&head, HELLO_LEN)
            .and_then(|n| match n {
                HELLO_LEN => Ok(()),
                _ => Err(crate::link::FrameError::Bad("a short Hello".into())),
            })
            .and_then(|()| link.open(&head, hello, Kind::Hello, u64::MAX));
        if let Err(e) = checked {
            return Step::Refused(format!("rank {}'s Hello: {e}", o.from));
        }
        if link.stream().set_nonblocking(false).is_err() {
            return Step::Refused("the socket could not be made blocking".into());
        }
        Step::Arrived(Box::new(Arrival {
            rank: o.from,
            port: hello.try_into().map_or(0, parse_hello),
            addr: self.addr,
            link,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dial::dial;

    fn config(rank: u16) -> RingConfig {
        RingConfig {
            rank,
            world: 2,
            job: 3,
            key: 0x7E57,
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn a_flood_of_idle_connections_gives_way_to_a_rank_that_proves_the_key() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        // More idle connections than handshake slots, all queued before the rank's.
        let idle: Vec<TcpStream> = (0..MAX_PENDING + 6)
            .map(|_| TcpStream::connect(at).unwrap())
            .collect();
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut gate = Gate::default();
        let (dialed, gathered) = std::thread::scope(|s| {
            let d = s.spawn(|| dial(&config(0), Role::Ring, 1, at, 7, deadline));
            let g = gate.gather(&listener, &config(1), Role::Ring, &[0], deadline);
            (d.join().unwrap(), g)
        });
        assert!(dialed.is_ok(), "rank 0's handshake");
        let arrived = gathered.expect("rank 0 arrived");
        assert_eq!((arrived[0].rank, arrived[0].port), (0, 7));
        // The idle ones that did not fit were closed, oldest first.
        assert!(gate.refused > 6, "{gate:?}");
        drop(idle);
    }
}
