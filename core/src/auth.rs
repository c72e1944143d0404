//! Proof of a job's key without sending it, and cookies that make a handshake fresh
//! (protocol.md §4.2).
//!
//! Two tools, both HMAC-SHA-256 from RustCrypto (`hmac`, `sha2`; no hand-written
//! cryptography), both `no_std` and allocation-free:
//!
//! - [`tag`] / [`verify`]: a 16-byte MAC over a message's bytes, keyed with the job's 64-bit
//!   key (its 8 big-endian bytes) and a domain [`Label`], so a tag made for one use (a Join)
//!   is never valid for another (a Status, a fallback frame). [`verify`] compares in constant
//!   time.
//! - [`CookieJar`]: the switch's stateless, expiring, address-bound cookies, in the way of
//!   DTLS's HelloVerifyRequest and WireGuard's cookie reply. A cookie is a MAC, under a
//!   secret of the switch's, of the time window, the sender's address and the Join's job,
//!   rank and nonce; it is valid in the window it was issued in and the next one. A Join
//!   must carry a valid cookie and a valid tag over it (the tag covers the cookie), so a
//!   Join captured earlier, or replayed from another address, is refused: its cookie is
//!   stale or bound to the address it was issued to, and no one without the key can make a
//!   tag over a fresh one.
//!
//! Addresses are whatever the adapter uses; any `Hash` type works, fed through the MAC, so
//! a cookie is stable within one switch process (which is all it must be: a restarted
//! switch issues new ones).

use core::hash::{Hash, Hasher};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::time::{Duration, Instant};

type HmacSha256 = Hmac<Sha256>;

/// Length of a message tag in bytes (HMAC-SHA-256 truncated to 128 bits).
pub const TAG_LEN: usize = 16;

/// A message tag.
pub type Tag = [u8; TAG_LEN];

/// What a tag is for: mixed into the MAC first, so a tag of one kind never verifies as
/// another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Label {
    /// A Join (protocol.md §3.2).
    Join,
    /// A Status (protocol.md §3.7).
    Status,
    /// A frame of the TCP fallback (docs/fallback.md).
    Fallback,
}

impl Label {
    /// The bytes mixed into the MAC.
    pub const fn bytes(self) -> &'static [u8] {
        match self {
            Label::Join => b"switchml-rs v1 join\0",
            Label::Status => b"switchml-rs v1 status\0",
            Label::Fallback => b"switchml-rs v1 fallback\0",
        }
    }
}

fn keyed(key: &[u8], label: &[u8]) -> HmacSha256 {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts keys of every length"),
    };
    mac.update(label);
    mac
}

/// The tag of `parts` (concatenated) under the job key `key`, for `label`.
pub fn tag(key: u64, label: Label, parts: &[&[u8]]) -> Tag {
    let mut mac = keyed(&key.to_be_bytes(), label.bytes());
    for p in parts {
        mac.update(p);
    }
    let full = mac.finalize().into_bytes();
    let mut out = [0u8; TAG_LEN];
    out.copy_from_slice(&full[..TAG_LEN]);
    out
}

/// Whether `got` is the tag of `parts` under `key` for `label`, compared in constant time.
pub fn verify(key: u64, label: Label, parts: &[&[u8]], got: &[u8]) -> bool {
    let mut mac = keyed(&key.to_be_bytes(), label.bytes());
    for p in parts {
        mac.update(p);
    }
    got.len() == TAG_LEN && mac.verify_truncated_left(got).is_ok()
}

/// Feeds whatever an address's `Hash` writes into a MAC.
struct MacHasher<'m>(&'m mut HmacSha256);

impl Hasher for MacHasher<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        0
    }
}

/// The switch's cookie issuer and checker (see the module docs).
#[derive(Clone)]
pub struct CookieJar {
    secret: [u8; 32],
    window: Duration,
}

impl core::fmt::Debug for CookieJar {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CookieJar")
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

/// Who a cookie is for: the Join's (or Status's) job, rank and nonce, and the job's run as
/// the switch saw it when it issued the cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieFor {
    /// The job.
    pub job: u16,
    /// The rank.
    pub rank: u16,
    /// The sender's nonce.
    pub nonce: u32,
    /// The job's run: its session while one is open, else a value naming the next one
    /// ([`CookieFor::run_of`]). A cookie issued in one run is no cookie in the next, so a
    /// Join captured in an earlier run cannot end a later one, even replayed from its own
    /// address within the cookie's window.
    pub run: u64,
}

impl CookieFor {
    /// The `run` of a job whose current session is `session` (0: none) after `runs` runs.
    pub const fn run_of(session: u32, runs: u64) -> u64 {
        if session != 0 {
            session as u64
        } else {
            // Never a session (those are below 2^32).
            (1 << 32) | (runs & 0xFFFF_FFFF)
        }
    }
}

impl CookieJar {
    /// How long a cookie's issuing window lasts; a cookie is valid in its window and the
    /// next, so for between one and two windows.
    pub const WINDOW: Duration = Duration::from_secs(30);

    /// A jar with `secret` (random, from the adapter: the core has no randomness).
    pub const fn new(secret: [u8; 32]) -> Self {
        CookieJar {
            secret,
            window: Self::WINDOW,
        }
    }

    /// The same jar with another window length (tests; at least one microsecond).
    pub const fn with_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    fn window_index(&self, now: Instant) -> u64 {
        now.total_micros() / self.window.total_micros().max(1)
    }

    fn cookie_at<A: Hash>(&self, index: u64, from: &A, who: CookieFor) -> u64 {
        let mut mac = keyed(&self.secret, b"switchml-rs v1 cookie\0");
        mac.update(&index.to_be_bytes());
        mac.update(&who.job.to_be_bytes());
        mac.update(&who.rank.to_be_bytes());
        mac.update(&who.nonce.to_be_bytes());
        mac.update(&who.run.to_be_bytes());
        from.hash(&mut MacHasher(&mut mac));
        let full = mac.finalize().into_bytes();
        let mut b = [0u8; 8];
        b.copy_from_slice(&full[..8]);
        // 0 means "no cookie" on the wire.
        u64::from_be_bytes(b).max(1)
    }

    /// The cookie to give `from` now.
    pub fn issue<A: Hash>(&self, now: Instant, from: &A, who: CookieFor) -> u64 {
        self.cookie_at(self.window_index(now), from, who)
    }

    /// Whether `cookie` was issued to `from` for `who` in this window or the one before.
    pub fn check<A: Hash>(&self, now: Instant, from: &A, who: CookieFor, cookie: u64) -> bool {
        if cookie == 0 {
            return false;
        }
        let i = self.window_index(now);
        let now_ok = self.cookie_at(i, from, who) == cookie;
        let before_ok = i > 0 && self.cookie_at(i - 1, from, who) == cookie;
        now_ok | before_ok
    }
}

/// Parse a job key's text form: 1 to 16 hex digits, one optional `0x` in front, blanks
/// around ignored (protocol.md §4.1). The one parser of the switch's `--job`, `SWITCHML_JOB_KEY`, the worker's
/// settings and the Python package.
pub fn parse_key(text: &str) -> Result<u64, KeyTextError> {
    let text = text.trim();
    // One `0x` at most; and `from_str_radix` alone would take a sign (`+ab`).
    let hex = text.strip_prefix("0x").unwrap_or(text);
    if hex.is_empty() || hex.len() > 16 {
        return Err(KeyTextError::Length);
    }
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(KeyTextError::Digit);
    }
    u64::from_str_radix(hex, 16).map_err(|_| KeyTextError::Digit)
}

/// Why a key's text is not one ([`parse_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KeyTextError {
    /// Fewer than 1 or more than 16 hex digits.
    Length,
    /// A character that is not a hex digit.
    Digit,
}

impl core::fmt::Display for KeyTextError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            KeyTextError::Length => "expected 1 to 16 hex digits",
            KeyTextError::Digit => "invalid digit found in string",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHO: CookieFor = CookieFor {
        job: 7,
        rank: 1,
        nonce: 0xABCD,
        run: CookieFor::run_of(0, 3),
    };

    #[test]
    fn a_tag_verifies_only_with_its_key_label_and_bytes() {
        let t = tag(0x5EC2E7, Label::Join, &[b"abc", b"def"]);
        assert!(verify(0x5EC2E7, Label::Join, &[b"abcdef"], &t));
        assert!(!verify(0x5EC2E8, Label::Join, &[b"abcdef"], &t));
        assert!(!verify(0x5EC2E7, Label::Status, &[b"abcdef"], &t));
        assert!(!verify(0x5EC2E7, Label::Join, &[b"abcdeg"], &t));
        assert!(!verify(0x5EC2E7, Label::Join, &[b"abcdef"], &t[..15]));
    }

    #[test]
    fn a_tag_is_hmac_sha256_truncated() {
        // RFC 4231 test case 2 shape, with our label: the known answer pins the construction
        // an independent implementation must reproduce (protocol.md §4.2).
        let t = tag(0, Label::Join, &[]);
        let mut mac = HmacSha256::new_from_slice(&[0u8; 8]).unwrap();
        mac.update(b"switchml-rs v1 join\0");
        assert_eq!(t[..], mac.finalize().into_bytes()[..16]);
    }

    #[test]
    fn a_cookie_is_bound_to_its_address_and_who_and_expires() {
        let jar = CookieJar::new([7; 32]).with_window(Duration::from_secs(10));
        let t0 = Instant::from_millis(100_000);
        let c = jar.issue(t0, &1234u32, WHO);
        assert_ne!(c, 0);
        assert!(jar.check(t0, &1234u32, WHO, c));
        assert!(jar.check(t0 + Duration::from_secs(15), &1234u32, WHO, c));
        assert!(!jar.check(t0 + Duration::from_secs(25), &1234u32, WHO, c));
        assert!(!jar.check(t0, &1235u32, WHO, c));
        let other = CookieFor { nonce: 1, ..WHO };
        assert!(!jar.check(t0, &1234u32, other, c));
        let next_run = CookieFor {
            run: CookieFor::run_of(0x77, 4),
            ..WHO
        };
        assert!(!jar.check(t0, &1234u32, next_run, c));
        assert!(!jar.check(t0, &1234u32, WHO, 0));
        let another_switch = CookieJar::new([8; 32]).with_window(Duration::from_secs(10));
        assert!(!another_switch.check(t0, &1234u32, WHO, c));
    }
}
