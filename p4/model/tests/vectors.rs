//! The golden wire vectors (`tests/vectors/wire.txt`) through the model: in file order on
//! the replay test bed, every vector gets the reference switch's verdict and answer bytes;
//! every invalid vector is dropped as `Malformed` (or `UnexpectedType` for types only the
//! switch sends, which the reference does not parse); the valid Contributions are aggregated
//! in a run of their session; and the framed path answers each with the same switchml bytes
//! as the bare path.

use switchml_core::switch::DropReason;
use switchml_core::wire::{DataPacket, JoinPacket, JoinRepr};
use switchml_p4model::headers::TRANSPORT_LEN;
use switchml_p4model::{Pipeline, Verdict, MAX_COUNT, OUT_LEN};
use switchml_p4model_harness::equivalence::{Pair, RefSlot, Setup};
use switchml_p4model_harness::testbed;
use switchml_tests::vectors::{load, Vector, WIRE};

fn vectors() -> Vec<Vector> {
    load(WIRE).expect("tests/vectors/wire.txt loads")
}

fn setup() -> Setup {
    Setup {
        slots: 40,
        epoch: testbed::EPOCH,
        jobs: testbed::jobs().to_vec(),
        tiers: Vec::new(),
    }
}

#[test]
fn every_vector_gets_the_reference_verdict_and_bytes() {
    let setup = setup();
    let mut pool = vec![RefSlot::IDLE; setup.slots];
    let mut pair = Pair::new(&setup, &mut pool).unwrap();
    let vectors = vectors();
    for v in &vectors {
        assert_eq!(pair.feed(&v.bytes), Ok(()), "[{}]", v.name);
    }
    assert_eq!(pair.compare_state(), Ok(()));
    assert_eq!(pair.fed(), vectors.len());
    assert!(vectors.len() > 50);
}

/// Open job `job`'s run on `p` with `session`: a Join of its rank 0 with the test bed's key
/// and the whole job as its lane, whose nonce becomes the run's session.
fn open_run(p: &mut Pipeline, job: u16, session: u32) {
    let c = p.job(job).expect("a test bed job").config;
    let repr = JoinRepr {
        job,
        rank: 0,
        world: c.world,
        slot_lo: 0,
        slot_count: c.slot_count,
        count: MAX_COUNT,
        lanes: 1,
        nonce: session,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(testbed::KEY);
    let mut join = vec![0u8; repr.buffer_len()];
    repr.emit(&mut JoinPacket::new_unchecked(&mut join[..]));
    let verdict = p.process_datagram(&join, &mut vec![0u8; OUT_LEN]);
    assert!(
        matches!(verdict, Verdict::Unicast { .. } | Verdict::Multicast { .. }),
        "{verdict:?}"
    );
    assert_eq!(p.job(job).unwrap().session, session);
}

#[test]
fn invalid_vectors_are_dropped_as_malformed_and_valid_contributions_aggregate() {
    let mut p = testbed::bare_pipeline();
    let mut out = vec![0u8; OUT_LEN];
    let (mut aggregated, mut malformed) = (0, 0);
    for v in vectors() {
        if v.expect_error.is_some() {
            let verdict = p.process_datagram(&v.bytes, &mut out);
            // Types only the switch sends are not parsed: the reference drops even a broken
            // one as UnexpectedType, and so does the model.
            let switch_only = matches!(
                v.bytes.get(..2),
                Some([1, 0x02 | 0x11 | 0x13 | 0x16 | 0x18])
            ) && v.bytes.len() >= 6;
            let reason = if switch_only {
                DropReason::UnexpectedType
            } else {
                DropReason::Malformed
            };
            assert_eq!(verdict, Verdict::Drop(reason), "[{}]", v.name);
            malformed += usize::from(!switch_only);
        } else if v.name.starts_with("contribution") {
            // Each on a fresh test bed whose job has a run of the vector's session (none can
            // have session 0).
            let mut fresh = testbed::bare_pipeline();
            let d = DataPacket::new_unchecked(&v.bytes[..]);
            if d.session() != 0 {
                open_run(&mut fresh, d.job_id(), d.session());
            }
            let expect = match v.name.as_str() {
                "contribution_session_0" => Verdict::Drop(DropReason::BadSession),
                // Rank 255 is not in the test bed's job 0x1234.
                "contribution_k256" => Verdict::Drop(DropReason::UnknownRank),
                _ => Verdict::Consumed,
            };
            let verdict = fresh.process_datagram(&v.bytes, &mut out);
            assert_eq!(verdict, expect, "[{}]", v.name);
            aggregated += usize::from(verdict == Verdict::Consumed);
        }
    }
    assert_eq!(aggregated, 6);
    assert!(malformed >= 15, "{malformed}");
}

/// The session most of the vectors carry (0x0A0B0C0D).
const VECTOR_SESSION: u32 = 0x0A0B_0C0D;

/// Joins of every rank of the test bed's jobs 7, 1 and 9, whose runs then have the session
/// most vectors carry (rank 0 opens them), so that the vectors after them meet open runs.
fn joins_opening_runs() -> Vec<(String, Vec<u8>)> {
    let mut joins = Vec::new();
    for c in testbed::jobs()
        .into_iter()
        .filter(|c| [7, 1, 9].contains(&c.id))
    {
        for rank in 0..c.world {
            let repr = JoinRepr {
                job: c.id,
                rank,
                world: c.world,
                slot_lo: 0,
                slot_count: c.slot_count,
                count: MAX_COUNT,
                lanes: 1,
                nonce: VECTOR_SESSION + u32::from(rank),
                cookie: 0,
                tag: [0; 16],
            }
            .sign(testbed::KEY);
            let mut b = vec![0u8; repr.buffer_len()];
            repr.emit(&mut JoinPacket::new_unchecked(&mut b[..]));
            joins.push((format!("join of job {} rank {rank}", c.id), b));
        }
    }
    joins
}

#[test]
fn framed_answers_carry_the_bare_answers() {
    let (mut framed, mut bare) = (testbed::pipeline(), testbed::bare_pipeline());
    let mut out = vec![0u8; OUT_LEN];
    let (mut answered, mut multicast) = (0, 0);
    let vectors = vectors().into_iter().map(|v| (v.name, v.bytes));
    for (name, bytes) in joins_opening_runs().into_iter().chain(vectors) {
        let (port, frame) = testbed::frame(&bytes);
        let frames = testbed::answers(&mut framed, port, &frame);
        let expect = match bare.process_datagram(&bytes, &mut out) {
            Verdict::Unicast { len, .. } => (1, len),
            Verdict::Multicast { job, len, .. } => {
                multicast += 1;
                (usize::from(framed.job(job).unwrap().config.world), len)
            }
            _ => (0, 0),
        };
        assert_eq!(frames.len(), expect.0, "[{name}] copies");
        for (_, f) in &frames {
            assert_eq!(&f[TRANSPORT_LEN..], &out[..expect.1], "[{name}]");
        }
        answered += frames.len();
    }
    assert!(
        answered > 10 && multicast > 3,
        "{answered} frames, {multicast} multicast"
    );
    assert_eq!(framed.counters(), bare.counters());
    assert_eq!(framed.recirculations(), bare.recirculations());
}

#[test]
fn the_committed_cli_commands_are_current() {
    let committed = include_str!("../../replay/commands.txt");
    assert_eq!(
        committed,
        testbed::cli_commands(),
        "run: cargo run -p switchml-p4model --bin expected -- --cli > p4/replay/commands.txt"
    );
}
