//! The connecting side of the fallback's handshakes ([`crate::link`]): a rank reaching rank
//! 0's rendezvous or its right neighbour's ring listener. Every read of the handshake has a
//! deadline, however slowly the bytes come, and a failed attempt (nothing listening yet, a
//! closed connection, an answer that does not prove the job key) is tried again until the
//! fallback timeout, so that a stranger who got to the port first holds the rank up no
//! longer than that.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::config::RingConfig;
use switchml_core::wire::ring_payload::emit_hello;

use crate::link::{
    check_answer, fresh_nonce, proof, AnswerError, Kind, Link, Opening, Role, ANSWER_LEN,
    FRAME_HEAD_LEN, HANDSHAKE, HELLO_LEN, PROOF_LEN,
};

/// How long an initiator waits before trying again after a failed attempt.
const RETRY: Duration = Duration::from_millis(50);

/// Why connecting to a peer failed, for the caller's error.
pub(crate) struct DialError {
    /// Why the last attempt failed, if any got as far as a connection.
    pub(crate) last: Option<String>,
}

/// Connect to rank `to` at `at` for `role`, prove the job key and check the peer's, and
/// send the Hello frame (with `port`); retry until `deadline` while nothing listens there
/// or the handshake fails.
pub(crate) fn dial(
    config: &RingConfig,
    role: Role,
    to: u16,
    at: SocketAddr,
    port: u16,
    deadline: Instant,
) -> Result<Link, DialError> {
    let mut last = None;
    loop {
        let stream = match connect_until(at, deadline) {
            Ok(s) => s,
            Err(Some(e)) => {
                return Err(DialError {
                    last: Some(format!("connecting failed: {e}")),
                })
            }
            Err(None) => return Err(DialError { last }),
        };
        match handshake(stream, config, role, to, port, deadline) {
            Ok(link) => return Ok(link),
            Err(why) => {
                log::debug!(
                    "rank {}: fallback {}: the handshake with rank {to} at {at} failed: {why}",
                    config.rank,
                    role.name()
                );
                // An attempt the deadline cut short says less than one refused before
                // it (a wrong key is still the reason on a busy machine).
                if last.is_none() || Instant::now() < deadline {
                    last = Some(why);
                }
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(DialError { last });
        }
        std::thread::sleep(RETRY.min(left));
    }
}

/// One attempt of [`dial`] on a connected stream.
fn handshake(
    mut s: TcpStream,
    config: &RingConfig,
    role: Role,
    to: u16,
    port: u16,
    deadline: Instant,
) -> Result<Link, String> {
    let until = deadline.min(Instant::now() + HANDSHAKE.min(config.timeout));
    let opening = Opening {
        role,
        job: config.job,
        world: config.world,
        from: config.rank,
        to,
        nonce: fresh_nonce(),
    };
    let _ = s.set_nodelay(true);
    let _ = s.set_write_timeout(Some(HANDSHAKE));
    s.write_all(&opening.emit())
        .map_err(|e| format!("sending the opening: {e}"))?;
    let mut a = [0u8; ANSWER_LEN];
    read_by(&mut s, &mut a, until).map_err(|e| match e.kind() {
        ErrorKind::UnexpectedEof => {
            "the peer closed the connection (another job or world size there, or no rank of \
             this job)"
                .to_string()
        }
        ErrorKind::TimedOut => "no answer to the opening in time".to_string(),
        _ => format!("reading the answer: {e}"),
    })?;
    let t = check_answer(config.key, &opening, &a).map_err(|e| match e {
        AnswerError::NotAnAnswer => "the answer is not a fallback handshake".to_string(),
        AnswerError::WrongTag => format!(
            "rank {to}'s answer did not prove the job key (a different key there, or no rank \
             of this job listens at that address)"
        ),
    })?;
    let mut link = Link::new(s, config.key, t, true, to);
    // The proof and the Hello frame in one write.
    let hello = emit_hello(port);
    let head = link.seal(Kind::Hello, config.rank, 0, &hello);
    let mut out = Vec::with_capacity(PROOF_LEN + FRAME_HEAD_LEN + HELLO_LEN);
    out.extend_from_slice(&proof(config.key, &t));
    out.extend_from_slice(&head);
    out.extend_from_slice(&hello);
    let mut stream = link.stream();
    stream
        .write_all(&out)
        .map_err(|e| format!("sending the proof: {e}"))?;
    Ok(link)
}

/// Fill `buf` from `s` by `deadline`, however slowly the bytes come.
fn read_by(s: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> std::io::Result<()> {
    let mut at = 0;
    while at < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        s.set_read_timeout(Some(left))?;
        match s.read(&mut buf[at..]) {
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => at += n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Connect to `to`, retrying while nothing listens there, until `deadline`; `Err(None)`
/// when the deadline passed, `Err(Some(e))` for any other failure.
pub(crate) fn connect_until(
    to: SocketAddr,
    deadline: Instant,
) -> Result<TcpStream, Option<std::io::Error>> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(None);
        }
        match TcpStream::connect_timeout(&to, left) {
            // Nothing listens there yet and the kernel gave this socket the very port it
            // dials: TCP's simultaneous open connected it to itself, and it holds the
            // port the listener is about to bind. Let it go and try again.
            Ok(s) if s.local_addr().ok() == Some(to) => {
                drop(s);
                std::thread::sleep(RETRY.min(left))
            }
            Ok(s) => return Ok(s),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionRefused | ErrorKind::TimedOut | ErrorKind::WouldBlock
                ) =>
            {
                std::thread::sleep(RETRY.min(left))
            }
            Err(e) => return Err(Some(e)),
        }
    }
}
