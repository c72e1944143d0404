//! The endpoint's admission of Joins and Statuses (protocol.md §4.2): a request that proves
//! the job's key but carries no valid cookie for its sender's address is answered with a
//! Cookie, and reaches the switch only when it comes back with one. The switch checks the
//! tag itself (it has the key); this is the part that needs a clock and an address, which
//! the switch does not have — a P4 switch's controller plays the same part.

use core::hash::Hash;

use super::{Endpoint, Place, Route, Transmit};
use crate::auth::CookieFor;
use crate::switch::ControlPlane;
use crate::time::Instant;
use crate::wire::{
    self, CookiePacket, CookieRepr, JoinPacket, JoinRepr, MessageType, StatusPacket, StatusRepr,
};

impl<A, S, G, const JOBS: usize> Endpoint<A, S, G, JOBS>
where
    A: Copy + PartialEq + Hash,
    S: AsRef<[Route<A>]> + AsMut<[Route<A>]>,
    G: ControlPlane,
{
    /// Answer a keyed Join or Status from `from` whose cookie is missing or stale with a
    /// fresh Cookie; `None` for anything the switch should see (a valid cookie, or a
    /// request it refuses anyway: unknown job, wrong tag, malformed).
    pub(super) fn demand_cookie(
        &mut self,
        now: Instant,
        from: &A,
        bytes: &[u8],
        out: &mut [u8],
    ) -> Option<Transmit> {
        let (kind, id, _) = wire::peek(bytes).ok()?;
        if !matches!(kind, MessageType::Join | MessageType::Status) {
            return None;
        }
        let snapshot = self.switch.job_snapshot(id)?;
        let key = snapshot.config.key;
        let run = CookieFor::run_of(snapshot.session, snapshot.counters.runs);
        let (who, cookie) = match kind {
            MessageType::Join => {
                let j = JoinRepr::parse(&JoinPacket::new_unchecked(bytes)).ok()?;
                // No cookie for a stranger: a wrong tag goes on to the switch's refusal.
                j.verify(key).then_some(())?;
                let who = CookieFor {
                    job: j.job,
                    rank: j.rank,
                    nonce: j.nonce,
                    run,
                };
                (who, j.cookie)
            }
            _ => {
                let q = StatusRepr::parse(&StatusPacket::new_unchecked(bytes)).ok()?;
                q.verify(key).then_some(())?;
                let who = CookieFor {
                    job: q.job,
                    rank: q.rank,
                    nonce: q.nonce,
                    run,
                };
                (who, q.cookie)
            }
        };
        if self.cookies.check(now, from, who, cookie) {
            return None;
        }
        let repr = CookieRepr {
            job: who.job,
            rank: who.rank,
            nonce: who.nonce,
            cookie: self.cookies.issue(now, from, who),
        };
        let len = repr.buffer_len();
        repr.emit(&mut CookiePacket::new_unchecked(out.get_mut(..len)?));
        self.cookies_sent += 1;
        Some(Transmit::Reply { len })
    }
}

impl<A, S, G, const JOBS: usize> Endpoint<A, S, G, JOBS>
where
    A: Copy + PartialEq + Hash,
    S: AsRef<[Route<A>]> + AsMut<[Route<A>]>,
    G: ControlPlane,
{
    /// A Join that child job `id` sends up (in `up`): put in the parent's cookie, sign it
    /// with the parent job's key, and keep it to send again when a new cookie comes.
    pub(super) fn sign_join_up(&mut self, id: u16, up: &mut [u8]) {
        let Some(r) = self.index(id).and_then(|i| self.routes[i].as_mut()) else {
            return;
        };
        let Place::Child { key, .. } = r.place else {
            return;
        };
        let Ok(j) = JoinRepr::parse(&JoinPacket::new_unchecked(&*up)) else {
            return;
        };
        let signed = JoinRepr {
            cookie: r.up.cookie,
            ..j
        }
        .sign(key);
        signed.emit(&mut JoinPacket::new_unchecked(&mut *up));
        let mut last = [0u8; wire::join::LEN];
        last.copy_from_slice(&up[..wire::join::LEN]);
        r.up.last = Some(last);
    }

    /// A Cookie from the parent of a child job here, answering the child's last Join up:
    /// keep it and send that Join up again with it, at once. `None` for any other datagram
    /// (a Cookie nobody here asked for goes on to the switch, which drops it).
    pub(super) fn parent_cookie(
        &mut self,
        from: &A,
        bytes: &[u8],
        out: &mut [u8],
    ) -> Option<Transmit> {
        if wire::peek(bytes).ok()?.0 != MessageType::Cookie {
            return None;
        }
        let c = CookieRepr::parse(&CookiePacket::new_unchecked(bytes)).ok()?;
        let r = self.routes.iter_mut().flatten().find(|r| {
            matches!(r.place, Place::Child { parent, job, .. } if job == c.job && parent == *from)
        })?;
        let Place::Child { key, .. } = r.place else {
            return None;
        };
        let last = r.up.last?;
        let j = JoinRepr::parse(&JoinPacket::new_unchecked(&last[..])).ok()?;
        if j.nonce != c.nonce || j.rank != c.rank {
            return Some(Transmit::Nothing);
        }
        r.up.cookie = c.cookie;
        let again = JoinRepr {
            cookie: c.cookie,
            ..j
        }
        .sign(key);
        let len = again.buffer_len();
        again.emit(&mut JoinPacket::new_unchecked(out.get_mut(..len)?));
        let id = r.id;
        self.sign_join_up(id, &mut out[..len]);
        Some(Transmit::Lanes {
            job: id,
            session: 0,
            slot: None,
            len,
            up: true,
        })
    }
}

#[cfg(test)]
impl<A, S, G, const JOBS: usize> Endpoint<A, S, G, JOBS>
where
    A: Copy + PartialEq + Hash,
    S: AsRef<[Route<A>]> + AsMut<[Route<A>]>,
    G: ControlPlane,
{
    /// [`Endpoint::handle`], and where the answer is a Cookie, the Join or Status again with
    /// it, signed with the job's key: what a worker or `doctor` does (tests).
    pub(crate) fn handle_admitted(
        &mut self,
        now: Instant,
        from: A,
        bytes: &[u8],
        out: &mut [u8],
    ) -> Transmit {
        let t = self.handle(now, from, bytes, out);
        let Transmit::Reply { len } = t else {
            return t;
        };
        let Ok(c) = CookieRepr::parse(&CookiePacket::new_unchecked(&out[..len])) else {
            return t;
        };
        let Some(key) = self.switch.job_snapshot(c.job).map(|j| j.config.key) else {
            return t;
        };
        let mut again = [0u8; wire::join::LEN];
        let n = if let Ok(j) = JoinRepr::parse(&JoinPacket::new_unchecked(bytes)) {
            let j = JoinRepr {
                cookie: c.cookie,
                ..j
            }
            .sign(key);
            j.emit(&mut JoinPacket::new_unchecked(&mut again[..]));
            wire::join::LEN
        } else if let Ok(q) = StatusRepr::parse(&StatusPacket::new_unchecked(bytes)) {
            let q = StatusRepr {
                cookie: c.cookie,
                ..q
            }
            .sign(key);
            q.emit(&mut StatusPacket::new_unchecked(
                &mut again[..wire::status::LEN],
            ));
            wire::status::LEN
        } else {
            return t;
        };
        self.handle(now, from, &again[..n], out)
    }
}

#[cfg(test)]
mod tests {
    //! One job (7: two ranks, key 9) behind an endpoint; addresses are numbers.
    use super::*;
    use crate::switch::{JobConfig, Slot, Switch};
    use crate::time::Duration;
    use crate::wire::{AbortReason, Message};

    type Ep<'a> = Endpoint<u32, [Route<u32>; 4], Switch<'a, 8, 1, 2>, 2>;
    const OUT: usize = Switch::<8, 1, 2>::OUT_LEN;
    const KEY: u64 = 9;

    fn endpoint(pool: &mut [Slot<8, 1>]) -> Ep<'_> {
        let mut e = Endpoint::new(Switch::new(pool, 1), Duration::from_secs(3600))
            .with_cookie_secret([3; 32]);
        let job = JobConfig {
            id: 7,
            world: 2,
            slot_lo: 0,
            slot_count: 4,
            key: KEY,
        };
        e.add_job(job, [None; 4]).unwrap();
        e
    }

    fn join(rank: u16, nonce: u32, cookie: u64, key: u64) -> [u8; 44] {
        let mut b = [0u8; 44];
        JoinRepr {
            job: 7,
            rank,
            world: 2,
            slot_lo: 0,
            slot_count: 4,
            count: 1,
            lanes: 1,
            nonce,
            cookie,
            tag: [0; 16],
        }
        .sign(key)
        .emit(&mut JoinPacket::new_unchecked(&mut b[..]));
        b
    }

    fn status(cookie: u64, key: u64) -> [u8; 36] {
        let mut b = [0u8; 36];
        StatusRepr {
            job: 7,
            rank: 0,
            nonce: 5,
            cookie,
            tag: [0; 16],
        }
        .sign(key)
        .emit(&mut StatusPacket::new_unchecked(&mut b[..]));
        b
    }

    /// The answer to `bytes` from `from`: the message, or `None` for no answer.
    fn answer<'o>(
        e: &mut Ep<'_>,
        t: Instant,
        from: u32,
        bytes: &[u8],
        out: &'o mut [u8],
    ) -> Option<Message<'o>> {
        match e.handle(t, from, bytes, out) {
            Transmit::Reply { len } | Transmit::Lanes { len, .. } => {
                Some(Message::parse(&out[..len]).unwrap())
            }
            Transmit::Nothing => None,
        }
    }

    fn cookie_of(m: Option<Message<'_>>) -> u64 {
        match m {
            Some(Message::Cookie(c)) => c.cookie,
            other => panic!("not a Cookie: {other:?}"),
        }
    }

    #[test]
    fn a_join_is_served_only_with_a_cookie_of_its_own_address_and_a_recent_window() {
        let mut pool = [Slot::IDLE; 4];
        let mut e = endpoint(&mut pool);
        let mut out = [0u8; OUT];
        let t0 = Instant::from_millis(1_000_000);
        // No cookie: a 20-byte Cookie for a 44-byte Join, and nothing learned.
        let c = cookie_of(answer(&mut e, t0, 10, &join(0, 100, 0, KEY), &mut out));
        assert_eq!(e.cookies_sent(), 1);
        assert_eq!(e.switch().job(7).unwrap().joined().len(), 0);
        // With it, from the same address: joined.
        let signed = join(0, 100, c, KEY);
        let reply = answer(&mut e, t0, 10, &signed, &mut out);
        assert!(matches!(reply, Some(Message::JoinReply(_))), "{reply:?}");
        assert_eq!(e.switch().job(7).unwrap().joined().len(), 1);
        // The captured Join replayed from another address: a Cookie for that address, and
        // the lane still goes to the first one.
        let stranger = cookie_of(answer(&mut e, t0, 66, &signed, &mut out));
        assert_ne!(stranger, c, "a cookie names its address");
        let session = e.switch().job(7).unwrap().session();
        let lanes = Transmit::Lanes {
            job: 7,
            session,
            slot: None,
            len: 0,
            up: false,
        };
        let to: heapless::Vec<u32, 4> = e.destinations(&lanes, &0).copied().collect();
        assert_eq!(to, [10]);
        // The captured Join replayed two windows later, from its own address: stale.
        let later = t0 + Duration::from_secs(61);
        cookie_of(answer(&mut e, later, 10, &signed, &mut out));
        // A new process of rank 0 replaying an old Join cannot end the run either: a
        // Join of another nonce with the old cookie is no Join of the run.
        let restart = join(0, 101, c, KEY);
        cookie_of(answer(&mut e, t0, 66, &restart, &mut out));
        assert_eq!(e.switch().job(7).unwrap().session(), session);
    }

    /// Issue 25, item 3: a Join captured in one run, replayed once in the next — even from
    /// its own address, within its cookie's window — used to end that run.
    #[test]
    fn a_join_of_an_earlier_run_replayed_from_its_address_ends_no_run() {
        let mut pool = [Slot::IDLE; 4];
        let mut e = endpoint(&mut pool);
        let mut out = [0u8; OUT];
        let t0 = Instant::from_millis(1_000_000);
        // Run 1: ranks 0 (address 10, nonce 100) and 1 (address 20, nonce 200) join.
        let mut captured = [0u8; 44];
        for (rank, from, nonce) in [(0, 10, 100), (1, 20, 200)] {
            let c = cookie_of(answer(
                &mut e,
                t0,
                from,
                &join(rank, nonce, 0, KEY),
                &mut out,
            ));
            let signed = join(rank, nonce, c, KEY);
            if rank == 0 {
                captured = signed;
            }
            assert!(answer(&mut e, t0, from, &signed, &mut out).is_some());
        }
        let run1 = e.switch().job(7).unwrap().session();
        assert!(e.switch().job(7).unwrap().all_joined());
        // Both leave: run 1 ends. Run 2: new processes (nonces 101, 201), same addresses.
        for rank in 0..2 {
            let mut leave = [0u8; 12];
            crate::wire::LeaveRepr {
                job: 7,
                rank,
                session: run1,
            }
            .emit(&mut crate::wire::LeavePacket::new_unchecked(&mut leave[..]));
            e.handle(t0, 10, &leave, &mut out);
        }
        assert!(!e.switch().job(7).unwrap().has_run());
        for (rank, from, nonce) in [(0, 10, 101), (1, 20, 201)] {
            let t = e.handle_admitted(t0, from, &join(rank, nonce, 0, KEY), &mut out);
            assert!(!matches!(t, Transmit::Nothing));
        }
        let run2 = e.switch().job(7).unwrap().session();
        assert!(run2 != run1 && e.switch().job(7).unwrap().all_joined());
        // The captured Join of run 1, from its own address, a second later: a Cookie, and
        // run 2 goes on (before, a new nonce for a rank of a complete run ended it).
        let later = t0 + Duration::from_secs(1);
        cookie_of(answer(&mut e, later, 10, &captured, &mut out));
        assert_eq!(e.switch().job(7).unwrap().session(), run2);
        assert_eq!(e.switch().job(7).unwrap().counters().aborts, 0);
    }

    #[test]
    fn a_stranger_gets_a_refusal_and_no_cookie() {
        let mut pool = [Slot::IDLE; 4];
        let mut e = endpoint(&mut pool);
        let mut out = [0u8; OUT];
        let t0 = Instant::from_millis(5);
        match answer(&mut e, t0, 10, &join(0, 100, 0, KEY ^ 1), &mut out) {
            Some(Message::Abort(a)) => assert_eq!(a.reason, AbortReason::BadKey),
            other => panic!("{other:?}"),
        }
        assert_eq!(e.cookies_sent(), 0);
        assert_eq!(e.switch().job(7).unwrap().counters().unauthorized, 1);
    }

    #[test]
    fn a_status_is_answered_only_to_the_key_and_a_cookie() {
        let mut pool = [Slot::IDLE; 4];
        let mut e = endpoint(&mut pool);
        let mut out = [0u8; OUT];
        let t0 = Instant::from_millis(5);
        assert!(answer(&mut e, t0, 10, &status(0, KEY ^ 1), &mut out).is_none());
        let mut unknown = status(0, KEY);
        unknown[3] = 8;
        assert!(answer(&mut e, t0, 10, &unknown, &mut out).is_none());
        let c = cookie_of(answer(&mut e, t0, 10, &status(0, KEY), &mut out));
        assert!(answer(&mut e, t0, 11, &status(c, KEY), &mut out)
            .is_some_and(|m| matches!(m, Message::Cookie(_))));
        let reply = answer(&mut e, t0, 10, &status(c, KEY), &mut out);
        assert!(matches!(reply, Some(Message::StatusReply(_))), "{reply:?}");
    }
}
