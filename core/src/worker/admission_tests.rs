//! What reaches the worker without the run's secrets changes nothing (protocol.md §4.2):
//! a ProbeReply of another session, a Cookie of another nonce; and the worker takes the
//! switch's Cookie into its next Join, signed.

use super::tests::{config, job_3, join_both, ms, TestWorker};
use super::*;
use crate::switch::Slot;
use crate::wire::{CookiePacket, CookieRepr, JoinRepr, Message, ProbeReplyPacket, ProbeReplyRepr};

fn probe_reply(session: u32, epoch: u32) -> [u8; 29] {
    let mut b = [0u8; 29];
    ProbeReplyRepr {
        job: 3,
        rank: 0,
        slot: 0,
        ver: 0,
        state: crate::wire::SlotState::Idle,
        remaining: 0,
        seq: 0,
        epoch,
        world: 2,
        session,
        seen: &[0],
    }
    .emit(&mut ProbeReplyPacket::new_unchecked(&mut b[..]));
    b
}

fn cookie(nonce: u32, cookie: u64) -> [u8; 20] {
    let mut b = [0u8; 20];
    CookieRepr {
        job: 3,
        rank: 0,
        nonce,
        cookie,
    }
    .emit(&mut CookiePacket::new_unchecked(&mut b[..]));
    b
}

fn next_join(w: &mut TestWorker<'_>, now: Instant) -> Option<JoinRepr> {
    let mut buf = [0u8; 64];
    let len = w.poll_transmit(now, &mut buf)?;
    match Message::parse(&buf[..len]) {
        Ok(Message::Join(j)) => Some(j),
        other => panic!("not a Join: {other:?}"),
    }
}

/// Issue 25, item 1: one forged ProbeReply naming another epoch ended every rank of a
/// running job. It must name the run's session now.
#[test]
fn a_probe_reply_of_another_session_changes_nothing() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let mut w = TestWorker::new(config()).unwrap();
    join_both(&mut w, &mut s);
    let session = super::tests::RANK1_NONCE;
    for forged in [0, session ^ 1, 0xFFFF_FFFF] {
        w.handle_packet(ms(1), &probe_reply(forged, 0xBAD));
        assert!(
            w.is_running(),
            "a ProbeReply of session {forged:#x} ended the lane"
        );
        assert_eq!(w.failure(), None);
    }
    // The switch's own answer still says that it restarted.
    w.handle_packet(ms(1), &probe_reply(session, 0xBAD));
    assert!(matches!(
        w.failure(),
        Some(WorkerError::SwitchRestarted { new: 0xBAD, .. })
    ));
}

#[test]
fn a_cookie_goes_into_the_next_join_signed_and_only_the_first_two_send_it_at_once() {
    let key = 0x005E_C2E7;
    let mut w = TestWorker::new(Config { key, ..config() }).unwrap();
    let nonce = w.config().nonce;
    let first = next_join(&mut w, ms(0)).expect("the first Join");
    assert_eq!(first.cookie, 0);
    assert!(first.verify(key), "the Join proves the key");
    assert!(!first.verify(key ^ 1));
    // A Cookie of another process is ignored.
    w.handle_packet(ms(1), &cookie(nonce ^ 1, 77));
    assert!(next_join(&mut w, ms(1)).is_none());
    // The switch's Cookie: the Join goes again at once, with it, signed over it.
    w.handle_packet(ms(1), &cookie(nonce, 77));
    let again = next_join(&mut w, ms(1)).expect("the Join again, at once");
    assert_eq!(again.cookie, 77);
    assert!(again.verify(key));
    // A second new cookie (a run opened in between) sends it again at once too.
    w.handle_packet(ms(1), &cookie(nonce, 78));
    assert_eq!(next_join(&mut w, ms(1)).map(|j| j.cookie), Some(78));
    // A flood of forged Cookies makes no Join each: the next waits for the timer, and
    // carries the latest cookie.
    for c in 79..90 {
        w.handle_packet(ms(2), &cookie(nonce, c));
        assert!(next_join(&mut w, ms(2)).is_none(), "cookie {c}");
    }
    let timed = w.poll_timeout().expect("the resend timer");
    w.handle_timeout(timed);
    let resent = next_join(&mut w, timed).expect("the timed Join");
    assert_eq!(resent.cookie, 89);
    assert!(resent.verify(key));
}
