//! The handshake that opens every connection of the TCP fallback ring (docs/fallback.md,
//! "Frames and the handshake"): the initiator's opening, the responder's answer, and the
//! transcript both sides' tags cover. Little-endian, like [`super::ring_frame`]:
//!
//! ```text
//! opening:  0-3: "SMLH" | 4: version | 5: role | 6-7: job | 8-9: world
//!           10-11: from (the initiator's rank) | 12-13: to (the rank it wants) | 14-29: nonce
//! answer:   0-3: "SMLA" | 4-19: the responder's nonce | 20-35: its tag
//! proof:    0-15: the initiator's tag
//! ```
//!
//! The tags are HMAC-SHA-256 under the job key ([`crate::auth`], label `Fallback`) over
//! the [`Transcript`] under the names `answer` and `proof`; computing and checking them is
//! the adapter's (`switchml-ring`'s `link` module), which draws the nonces.

use crate::auth::TAG_LEN;

/// The first four bytes of an opening.
pub const OPENING_MAGIC: [u8; 4] = *b"SMLH";
/// The first four bytes of the responder's answer.
pub const ANSWER_MAGIC: [u8; 4] = *b"SMLA";
/// The handshake's version.
pub const VERSION: u8 = 1;
/// The length of a handshake nonce.
pub const NONCE_LEN: usize = 16;
/// The length of an opening.
pub const OPENING_LEN: usize = 14 + NONCE_LEN;
/// The length of the responder's answer: magic, its nonce, its tag.
pub const ANSWER_LEN: usize = 4 + NONCE_LEN + TAG_LEN;
/// The length of the initiator's proof: its tag.
pub const PROOF_LEN: usize = TAG_LEN;
/// The length of a [`Transcript`]: the opening less its magic, and the answer's nonce.
pub const TRANSCRIPT_LEN: usize = OPENING_LEN - 4 + NONCE_LEN;

/// What a connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RingRole {
    /// A rank meets rank 0 at the fallback address.
    Rendezvous,
    /// Rank `r` connects to rank `r + 1 mod P`.
    Ring,
    /// A code point this version does not know (an opening with one is refused).
    Unknown(u8),
}

impl RingRole {
    /// Return the role's name.
    pub const fn name(self) -> &'static str {
        match self {
            RingRole::Rendezvous => "rendezvous",
            RingRole::Ring => "ring",
            RingRole::Unknown(_) => "unknown",
        }
    }
}

impl From<u8> for RingRole {
    fn from(v: u8) -> Self {
        match v {
            1 => RingRole::Rendezvous,
            2 => RingRole::Ring,
            other => RingRole::Unknown(other),
        }
    }
}

impl From<RingRole> for u8 {
    fn from(r: RingRole) -> u8 {
        match r {
            RingRole::Rendezvous => 1,
            RingRole::Ring => 2,
            RingRole::Unknown(v) => v,
        }
    }
}

/// The initiator's first message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Opening {
    /// What the connection is for.
    pub role: RingRole,
    /// The job.
    pub job: u16,
    /// The number of ranks.
    pub world: u16,
    /// The initiator's rank.
    pub from: u16,
    /// The rank it wants to reach.
    pub to: u16,
    /// The initiator's fresh nonce.
    pub nonce: [u8; NONCE_LEN],
}

/// Why a responder refuses an opening that parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Refusal {
    /// It is for another role.
    Role,
    /// It is for another rank, job or world.
    NotForThisRank,
    /// It is from a rank this responder does not await.
    NotAwaited,
}

impl Opening {
    /// Write the opening's bytes.
    pub fn emit(&self) -> [u8; OPENING_LEN] {
        let mut b = [0u8; OPENING_LEN];
        b[0..4].copy_from_slice(&OPENING_MAGIC);
        b[4] = VERSION;
        b[5] = self.role.into();
        b[6..8].copy_from_slice(&self.job.to_le_bytes());
        b[8..10].copy_from_slice(&self.world.to_le_bytes());
        b[10..12].copy_from_slice(&self.from.to_le_bytes());
        b[12..14].copy_from_slice(&self.to.to_le_bytes());
        b[14..].copy_from_slice(&self.nonce);
        b
    }

    /// Parse an opening from the first [`OPENING_LEN`] bytes; `None` if it is not one
    /// (short, no magic, another version).
    pub fn parse(b: &[u8]) -> Option<Opening> {
        let b = b.get(..OPENING_LEN)?;
        if b[0..4] != OPENING_MAGIC || b[4] != VERSION {
            return None;
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&b[14..]);
        Some(Opening {
            role: b[5].into(),
            job: u16_at(6),
            world: u16_at(8),
            from: u16_at(10),
            to: u16_at(12),
            nonce,
        })
    }

    /// Check that the opening is for `role` at rank `rank` of job `job` with `world`
    /// ranks, from one of the ranks in `awaited`.
    pub fn check_for(
        &self,
        role: RingRole,
        job: u16,
        world: u16,
        rank: u16,
        awaited: &[u16],
    ) -> Result<(), Refusal> {
        if self.role != role {
            return Err(Refusal::Role);
        }
        if (self.job, self.world, self.to) != (job, world, rank) {
            return Err(Refusal::NotForThisRank);
        }
        if !awaited.contains(&self.from) {
            return Err(Refusal::NotAwaited);
        }
        Ok(())
    }
}

/// What both handshake tags and every frame tag cover: the opening without its magic,
/// and the responder's nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transcript(pub [u8; TRANSCRIPT_LEN]);

impl Transcript {
    /// The transcript of `opening` answered with `answer_nonce`.
    pub fn new(opening: &Opening, answer_nonce: &[u8; NONCE_LEN]) -> Transcript {
        let mut t = [0u8; TRANSCRIPT_LEN];
        t[..OPENING_LEN - 4].copy_from_slice(&opening.emit()[4..]);
        t[OPENING_LEN - 4..].copy_from_slice(answer_nonce);
        Transcript(t)
    }
}

/// Write the responder's answer: its magic, nonce and tag.
pub fn emit_answer(nonce: &[u8; NONCE_LEN], tag: &[u8; TAG_LEN]) -> [u8; ANSWER_LEN] {
    let mut b = [0u8; ANSWER_LEN];
    b[0..4].copy_from_slice(&ANSWER_MAGIC);
    b[4..4 + NONCE_LEN].copy_from_slice(nonce);
    b[4 + NONCE_LEN..].copy_from_slice(tag);
    b
}

/// Split an answer into its nonce and tag; `None` without the answer magic.
pub fn parse_answer(a: &[u8; ANSWER_LEN]) -> Option<([u8; NONCE_LEN], &[u8])> {
    if a[0..4] != ANSWER_MAGIC {
        return None;
    }
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&a[4..4 + NONCE_LEN]);
    Some((nonce, &a[4 + NONCE_LEN..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Rank 1 of job 3 (4 ranks) opens a ring edge to rank 2 with nonce 9 × 16.
    const BYTES: [u8; OPENING_LEN] = [
        b'S', b'M', b'L', b'H', 1, 2, 3, 0, 4, 0, 1, 0, 2, 0, // magic .. to
        9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, // nonce
    ];
    const OPENING: Opening = Opening {
        role: RingRole::Ring,
        job: 3,
        world: 4,
        from: 1,
        to: 2,
        nonce: [9; NONCE_LEN],
    };

    #[test]
    fn decode_known_bytes() {
        assert_eq!(Opening::parse(&BYTES), Some(OPENING));
    }

    #[test]
    fn encode_to_known_bytes() {
        assert_eq!(OPENING.emit(), BYTES);
        let t = Transcript::new(&OPENING, &[7; NONCE_LEN]);
        assert_eq!(t.0[..OPENING_LEN - 4], BYTES[4..]);
        assert_eq!(t.0[OPENING_LEN - 4..], [7; NONCE_LEN]);
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        assert_eq!(Opening::parse(&BYTES[..OPENING_LEN - 1]), None);
        let mut other = BYTES;
        other[4] = VERSION + 1;
        assert_eq!(Opening::parse(&other), None);
        assert_eq!(Opening::parse(&[0; OPENING_LEN]), None);
        assert_eq!(parse_answer(&[0; ANSWER_LEN]), None);
    }

    #[test]
    fn an_answer_splits_into_nonce_and_tag() {
        let a = emit_answer(&[5; NONCE_LEN], &[6; TAG_LEN]);
        assert_eq!(a[..4], *b"SMLA");
        assert_eq!(
            parse_answer(&a),
            Some(([5; NONCE_LEN], &[6u8; TAG_LEN][..]))
        );
    }

    #[test]
    fn a_responder_takes_only_the_openings_meant_for_it() {
        let ok = OPENING.check_for(RingRole::Ring, 3, 4, 2, &[1]);
        assert_eq!(ok, Ok(()));
        let check = |o: Opening| o.check_for(RingRole::Ring, 3, 4, 2, &[1]);
        let role = Opening {
            role: RingRole::Rendezvous,
            ..OPENING
        };
        assert_eq!(check(role), Err(Refusal::Role));
        for o in [
            Opening { job: 4, ..OPENING },
            Opening {
                world: 5,
                ..OPENING
            },
            Opening { to: 3, ..OPENING },
        ] {
            assert_eq!(check(o), Err(Refusal::NotForThisRank), "{o:?}");
        }
        assert_eq!(
            check(Opening { from: 0, ..OPENING }),
            Err(Refusal::NotAwaited)
        );
    }

    proptest! {
        #[test]
        fn parse_of_emit_is_identity(role: u8, job: u16, world: u16, from: u16, to: u16,
                                     nonce: [u8; NONCE_LEN]) {
            let o = Opening { role: role.into(), job, world, from, to, nonce };
            prop_assert_eq!(Opening::parse(&o.emit()), Some(o));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = Opening::parse(&bytes);
        }
    }
}
