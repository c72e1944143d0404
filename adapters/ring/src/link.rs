//! One authenticated connection of the fallback (the rendezvous or a ring edge): a
//! challenge–response handshake that proves the job key both ways, then frames that each
//! carry a tag over their bytes and their place in the stream. docs/fallback.md, "Frames
//! and the handshake", has the byte layouts and the threat model.
//!
//! **Handshake.** The side that connects (the initiator) sends an [`Opening`]: who it is
//! (job, world, its rank, the rank it wants, what for) and a fresh 16-byte nonce. The side
//! that accepts (the responder) checks that the opening is for it, draws its own nonce, and
//! answers with that nonce and a tag over the [`Transcript`] (every field of the opening
//! and both nonces). The initiator checks the tag and sends its own, over the same
//! transcript under another name. Both tags are HMAC-SHA-256 under the job key
//! ([`switchml_core::auth`], label [`Label::Fallback`]); each covers the other side's fresh
//! nonce, so a recorded handshake replayed to either side fails, and the two names
//! ("answer", "proof") keep a responder's tag from being reflected as an initiator's.
//!
//! **Frames.** After the handshake every frame is a 24-byte header, a 16-byte tag and the
//! payload. The tag covers the direction, the transcript (so the nonces of this
//! connection), the frame's sequence number in its direction (counted, never sent), the
//! header and the payload: a frame altered, dropped, replayed, reordered, reflected or
//! spliced in from another connection fails its tag. Frames are not encrypted.
//!
//! The byte layouts, and which opening a responder takes, are the core's
//! ([`switchml_core::wire::ring_handshake`], [`switchml_core::wire::ring_frame`]); this
//! module draws the nonces, computes and checks the tags, and counts the frames. The two
//! sides' I/O: [`crate::dial`] (connecting) and [`crate::gate`] (accepting).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use switchml_core::auth::{tag, verify, Label, Tag};
pub(crate) use switchml_core::wire::ring_frame::{
    FrameKind as Kind, HEAD_LEN as FRAME_HEAD_LEN, HELLO_LEN,
};
use switchml_core::wire::ring_frame::{RingFramePacket, RingFrameRepr, Unexpected};
use switchml_core::wire::ring_handshake::{emit_answer, parse_answer};
pub(crate) use switchml_core::wire::ring_handshake::{
    Opening, Refusal, RingRole as Role, Transcript, ANSWER_LEN, NONCE_LEN, OPENING_LEN, PROOF_LEN,
};

/// How long one handshake may take, at most (and never longer than the fallback
/// timeout): a connection that has not finished its handshake by then is closed.
pub(crate) const HANDSHAKE: Duration = Duration::from_secs(5);

/// Why a frame could not be read or written.
#[derive(Debug)]
pub(crate) enum FrameError {
    Io(std::io::Error),
    /// A frame that is not what this rank expected; its tag held, so the peer sent it.
    Bad(String),
    /// A frame whose tag failed, or whose header cannot be (no magic, too long): it was
    /// altered, replayed, reordered or forged on the way, or the peer is no rank of ours.
    Forged(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "{e}"),
            FrameError::Bad(m) | FrameError::Forged(m) => f.write_str(m),
        }
    }
}

impl From<std::io::Error> for FrameError {
    fn from(e: std::io::Error) -> Self {
        FrameError::Io(e)
    }
}

/// The responder's tag over `t`.
fn answer_tag(key: u64, t: &Transcript) -> Tag {
    tag(key, Label::Fallback, &[b"answer", &t.0])
}

/// A fresh handshake nonce from the crate's one source of OS-seeded randomness.
pub(crate) fn fresh_nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    n[..8].copy_from_slice(&switchml_udp::fresh::fresh_key().to_le_bytes());
    n[8..].copy_from_slice(&switchml_udp::fresh::fresh_key().to_le_bytes());
    n
}

/// The responder's answer to `opening`: its nonce and tag, and the transcript.
pub(crate) fn answer(key: u64, opening: &Opening) -> ([u8; ANSWER_LEN], Transcript) {
    let nonce = fresh_nonce();
    let t = Transcript::new(opening, &nonce);
    (emit_answer(&nonce, &answer_tag(key, &t)), t)
}

/// Check the responder's answer to `opening`: its magic and its tag; return the
/// transcript.
pub(crate) fn check_answer(
    key: u64,
    opening: &Opening,
    a: &[u8; ANSWER_LEN],
) -> Result<Transcript, AnswerError> {
    let (nonce, answer_tag) = parse_answer(a).ok_or(AnswerError::NotAnAnswer)?;
    let t = Transcript::new(opening, &nonce);
    if !verify(key, Label::Fallback, &[b"answer", &t.0], answer_tag) {
        return Err(AnswerError::WrongTag);
    }
    Ok(t)
}

/// Why an answer was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnswerError {
    /// No answer magic: not a fallback handshake.
    NotAnAnswer,
    /// The tag failed: the responder does not hold the job key.
    WrongTag,
}

/// The initiator's proof over `t`.
pub(crate) fn proof(key: u64, t: &Transcript) -> Tag {
    tag(key, Label::Fallback, &[b"proof", &t.0])
}

/// Whether `proof` is the initiator's tag over `t`.
pub(crate) fn proof_holds(key: u64, t: &Transcript, proof: &[u8]) -> bool {
    verify(key, Label::Fallback, &[b"proof", &t.0], proof)
}

/// Which way a frame goes: mixed into its tag, so a frame cannot be sent back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    FromInitiator = 1,
    FromResponder = 2,
}

/// One authenticated connection, after the handshake.
pub(crate) struct Link {
    stream: TcpStream,
    key: u64,
    transcript: Transcript,
    /// Whether this side connected.
    initiator: bool,
    /// The other side's rank.
    peer: u16,
    /// Frames sent and received: each frame's sequence number in its direction.
    sent: u64,
    received: u64,
}

impl Link {
    /// The link of a handshake that has succeeded.
    pub(crate) fn new(
        stream: TcpStream,
        key: u64,
        transcript: Transcript,
        initiator: bool,
        peer: u16,
    ) -> Link {
        Link {
            stream,
            key,
            transcript,
            initiator,
            peer,
            sent: 0,
            received: 0,
        }
    }

    /// Return the socket.
    pub(crate) fn stream(&self) -> &TcpStream {
        &self.stream
    }

    fn directions(&self) -> (Direction, Direction) {
        if self.initiator {
            (Direction::FromInitiator, Direction::FromResponder)
        } else {
            (Direction::FromResponder, Direction::FromInitiator)
        }
    }

    /// Return the bytes of the next frame this side sends, less its payload.
    pub(crate) fn seal(
        &mut self,
        kind: Kind,
        rank: u16,
        tensor: u64,
        payload: &[u8],
    ) -> [u8; FRAME_HEAD_LEN] {
        let mut h = [0u8; FRAME_HEAD_LEN];
        let mut frame = RingFramePacket::new_unchecked(&mut h[..]);
        let repr = RingFrameRepr {
            kind,
            rank,
            tensor,
            payload_len: payload.len() as u64,
        };
        repr.emit(&mut frame);
        let (dir, seq) = ([self.directions().0 as u8], self.sent.to_le_bytes());
        let parts = frame_parts(&dir, &self.transcript, &seq, frame.header_bytes(), payload);
        frame.set_tag(&tag(self.key, Label::Fallback, &parts));
        self.sent += 1;
        h
    }

    /// Send one frame.
    pub(crate) fn send(
        &mut self,
        kind: Kind,
        rank: u16,
        tensor: u64,
        payload: &[u8],
    ) -> Result<(), FrameError> {
        let head = self.seal(kind, rank, tensor, payload);
        self.stream.write_all(&head)?;
        self.stream.write_all(payload)?;
        Ok(())
    }

    /// Check a frame head before its payload is read: its header (magic, reserved byte)
    /// and a length of at most `max`; return the payload's length.
    pub(crate) fn payload_len(
        head: &[u8; FRAME_HEAD_LEN],
        max: usize,
    ) -> Result<usize, FrameError> {
        let repr = RingFrameRepr::parse(&RingFramePacket::new_unchecked(&head[..]))
            .map_err(|e| FrameError::Forged(format!("a frame without a ring header ({e})")))?;
        repr.payload_len_at_most(max).map_err(|_| {
            FrameError::Forged(format!(
                "a frame of {} bytes where at most {max} fit (the ranks' tensors differ, \
                 or the frame was altered)",
                repr.payload_len
            ))
        })
    }

    /// Check the next received frame's tag, then that it is of `kind`, from the peer, and
    /// for `tensor` (any with `u64::MAX`).
    pub(crate) fn open(
        &mut self,
        head: &[u8; FRAME_HEAD_LEN],
        payload: &[u8],
        kind: Kind,
        tensor: u64,
    ) -> Result<(), FrameError> {
        let (dir, seq) = ([self.directions().1 as u8], self.received.to_le_bytes());
        let frame = RingFramePacket::new_unchecked(&head[..]);
        let parts = frame_parts(&dir, &self.transcript, &seq, frame.header_bytes(), payload);
        if !verify(self.key, Label::Fallback, &parts, frame.tag()) {
            return Err(FrameError::Forged(format!(
                "a frame that failed its integrity check (frame {} from rank {}: altered, \
                 replayed, reordered or forged on the way)",
                self.received, self.peer
            )));
        }
        self.received += 1;
        // The tag held over a header the peer wrote, so it parses (`payload_len` checked it).
        let got = RingFrameRepr::parse(&frame)
            .map_err(|e| FrameError::Forged(format!("a frame without a ring header ({e})")))?;
        match got.expect(kind, tensor, self.peer) {
            Ok(()) => Ok(()),
            Err(Unexpected::KindOrTensor) => Err(FrameError::Bad(format!(
                "message kind {} for tensor {} where this rank expected {kind:?} for tensor \
                 {tensor}: the ranks did not submit the same tensors in the same order",
                u8::from(got.kind),
                got.tensor
            ))),
            Err(Unexpected::Sender) => Err(FrameError::Bad(format!(
                "a frame naming rank {} as its sender on rank {}'s connection",
                got.rank, self.peer
            ))),
        }
    }

    /// Receive one frame of `kind` for `tensor` (any with `u64::MAX`) of at most `max`
    /// bytes; return its payload.
    pub(crate) fn recv(
        &mut self,
        kind: Kind,
        tensor: u64,
        max: usize,
    ) -> Result<Vec<u8>, FrameError> {
        let mut head = [0u8; FRAME_HEAD_LEN];
        self.stream.read_exact(&mut head)?;
        let len = Link::payload_len(&head, max)?;
        let mut payload = vec![0u8; len];
        self.stream.read_exact(&mut payload)?;
        self.open(&head, &payload, kind, tensor)?;
        Ok(payload)
    }
}

/// What a frame's tag covers, in order: its name, its direction, the connection's
/// transcript, its sequence number in its direction, its header and its payload.
fn frame_parts<'a>(
    dir: &'a [u8; 1],
    t: &'a Transcript,
    seq: &'a [u8; 8],
    head: &'a [u8],
    payload: &'a [u8],
) -> [&'a [u8]; 6] {
    [b"frame", dir, &t.0, seq, head, payload]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RingConfig;
    use crate::dial::{dial, DialError};
    use crate::gate::Gate;
    use std::net::{TcpListener, TcpStream};
    use std::time::Instant;
    use switchml_core::wire::ring_frame::HEADER_LEN;

    const KEY: u64 = 0x5EC2_E700_0000_0001;

    fn config(rank: u16, key: u64) -> RingConfig {
        RingConfig {
            rank,
            world: 2,
            job: 3,
            key,
            timeout: Duration::from_secs(5),
        }
    }

    /// Rank 0 dials rank 1 (whose key is `KEY`) with `key`: rank 0's link, or why not;
    /// rank 1's link, or the ranks missing, and its gate.
    fn pair(key: u64) -> (Result<Link, DialError>, Result<Link, Vec<u16>>, Gate) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let deadline = Instant::now() + Duration::from_millis(1500);
        let mut gate = Gate::default();
        let (dialed, gathered) = std::thread::scope(|s| {
            let d = s.spawn(|| dial(&config(0, key), Role::Ring, 1, at, 7, deadline));
            let g = gate.gather(&listener, &config(1, KEY), Role::Ring, &[0], deadline);
            (d.join().unwrap(), g)
        });
        let gathered = gathered.map(|mut a| {
            let a = a.pop().unwrap();
            assert_eq!((a.rank, a.port), (0, 7));
            a.link
        });
        (dialed, gathered, gate)
    }

    fn linked() -> (Link, Link) {
        let (i, r, gate) = pair(KEY);
        assert_eq!(gate.refused, 0);
        let (i, r) = (i.ok().unwrap(), r.unwrap());
        // No test waits for ever on bytes that never come.
        for l in [&i, &r] {
            l.stream()
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
        }
        (i, r)
    }

    /// Write `bytes` on `link`'s socket as they are, behind the link's back.
    fn raw(link: &Link, bytes: &[&[u8]]) {
        let mut s = link.stream();
        for b in bytes {
            s.write_all(b).unwrap();
        }
    }

    fn forged(r: Result<Vec<u8>, FrameError>) -> bool {
        matches!(r, Err(FrameError::Forged(_)))
    }

    #[test]
    fn frames_pass_both_ways_after_the_handshake() {
        let (mut i, mut r) = linked();
        i.send(Kind::Partial, 0, 5, b"to the right").unwrap();
        i.send(Kind::Reduced, 0, 5, b"").unwrap();
        assert_eq!(r.recv(Kind::Partial, 5, 64).unwrap(), b"to the right");
        assert_eq!(r.recv(Kind::Reduced, 5, 64).unwrap(), b"");
        r.send(Kind::Table, 1, 0, b"back").unwrap();
        assert_eq!(i.recv(Kind::Table, u64::MAX, 64).unwrap(), b"back");
    }

    #[test]
    fn a_wrong_key_fails_the_handshake_at_both_ends() {
        let (dialed, gathered, gate) = pair(KEY ^ 1);
        let why = dialed.err().and_then(|e| e.last).expect("refused");
        assert!(why.contains("did not prove the job key"), "{why}");
        assert_eq!(gathered.err(), Some(vec![0]));
        assert!(gate.refused >= 1, "{gate:?}");
    }

    #[test]
    fn an_altered_frame_fails_its_tag() {
        for at in [0, 4, 6, 8, 16, HEADER_LEN, FRAME_HEAD_LEN] {
            let (mut i, mut r) = linked();
            let payload = *b"partial sums";
            let mut head = i.seal(Kind::Partial, 0, 5, &payload).to_vec();
            head.extend_from_slice(&payload);
            // At 16, the length: 12 becomes 8, so the receiver reads the frame's end.
            head[at] ^= 4;
            raw(&i, &[&head]);
            assert!(forged(r.recv(Kind::Partial, 5, 64)), "byte {at}");
        }
    }

    #[test]
    fn a_replayed_or_reordered_frame_fails_its_tag() {
        let (mut i, mut r) = linked();
        let first = i.seal(Kind::Partial, 0, 5, b"one");
        raw(&i, &[&first, b"one", &first, b"one"]);
        assert_eq!(r.recv(Kind::Partial, 5, 64).unwrap(), b"one");
        assert!(forged(r.recv(Kind::Partial, 5, 64)), "replayed");

        let (mut i, mut r) = linked();
        let a = i.seal(Kind::Partial, 0, 5, b"a");
        let b = i.seal(Kind::Partial, 0, 5, b"b");
        raw(&i, &[&b, b"b", &a, b"a"]);
        assert!(forged(r.recv(Kind::Partial, 5, 64)), "reordered");
    }

    #[test]
    fn a_frame_from_another_connection_or_sent_back_fails_its_tag() {
        let (mut i1, _r1) = linked();
        let (i2, mut r2) = linked();
        let head = i1.seal(Kind::Partial, 0, 5, b"x");
        raw(&i2, &[&head, b"x"]);
        assert!(forged(r2.recv(Kind::Partial, 5, 64)), "spliced");

        // The responder's first frame, written back to it as the initiator's first.
        let (i, mut r) = linked();
        let head = r.seal(Kind::Partial, 1, 5, b"x");
        raw(&i, &[&head, b"x"]);
        assert!(forged(r.recv(Kind::Partial, 5, 64)), "reflected");
    }

    #[test]
    fn an_oversized_or_unframed_frame_is_refused_before_its_payload_is_read() {
        let (mut i, mut r) = linked();
        let head = i.seal(Kind::Partial, 0, 5, &[0; 100]);
        raw(&i, &[&head]);
        assert!(forged(r.recv(Kind::Partial, 5, 64)));
        let (i, mut r) = linked();
        raw(&i, &[&[0xAB; FRAME_HEAD_LEN]]);
        assert!(forged(r.recv(Kind::Partial, 5, 64)));
    }

    #[test]
    fn a_recorded_handshake_replayed_to_the_responder_is_refused() {
        // Record what an initiator sends, through a relay, then replay it on a fresh
        // connection: the responder's new nonce makes the recorded proof wrong.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let relay = TcpListener::bind("127.0.0.1:0").unwrap();
        let via = relay.local_addr().unwrap();
        let deadline = Instant::now() + Duration::from_millis(1500);
        let recorded = std::thread::scope(|s| {
            let tap = s.spawn(|| {
                let (mut from, _) = relay.accept().unwrap();
                let mut to = TcpStream::connect(at).unwrap();
                let mut opening = [0u8; OPENING_LEN];
                from.read_exact(&mut opening).unwrap();
                to.write_all(&opening).unwrap();
                let mut ans = [0u8; ANSWER_LEN];
                to.read_exact(&mut ans).unwrap();
                from.write_all(&ans).unwrap();
                let mut rest = [0u8; PROOF_LEN + FRAME_HEAD_LEN + HELLO_LEN];
                from.read_exact(&mut rest).unwrap();
                to.write_all(&rest).unwrap();
                let mut all = opening.to_vec();
                all.extend_from_slice(&rest);
                all
            });
            let d = s.spawn(|| dial(&config(0, KEY), Role::Ring, 1, via, 7, deadline));
            let got =
                Gate::default().gather(&listener, &config(1, KEY), Role::Ring, &[0], deadline);
            assert!(
                d.join().unwrap().is_ok() && got.is_ok(),
                "the first handshake"
            );
            tap.join().unwrap()
        });
        let mut gate = Gate::default();
        let deadline = Instant::now() + Duration::from_millis(500);
        let replay = std::thread::spawn(move || {
            let mut s = TcpStream::connect(at).unwrap();
            let _ = s.write_all(&recorded);
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        });
        let got = gate.gather(&listener, &config(1, KEY), Role::Ring, &[0], deadline);
        assert_eq!(got.err(), Some(vec![0]));
        assert_eq!(gate.refused, 1);
        let why = gate.last_refusal.unwrap();
        assert!(why.contains("did not prove the job key"), "{why}");
        replay.join().unwrap();
    }
}
