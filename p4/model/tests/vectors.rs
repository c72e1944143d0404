//! The golden wire vectors (`tests/vectors/wire.txt`) through the model: in file order on
//! the replay test bed, every vector gets the reference switch's verdict and answer bytes;
//! every invalid vector is dropped as `Malformed` (or `UnexpectedType` for types only the
//! switch sends, which the reference does not parse); the valid Contributions are aggregated;
//! and the framed path answers each with the same switchml bytes as the bare path.

use switchml_core::switch::DropReason;
use switchml_p4model::equivalence::{Pair, RefSlot, Setup};
use switchml_p4model::headers::TRANSPORT_LEN;
use switchml_p4model::{testbed, Verdict, OUT_LEN};
use switchml_tests::vectors::{load, Vector, WIRE};

fn vectors() -> Vec<Vector> {
    load(WIRE).expect("tests/vectors/wire.txt loads")
}

fn setup() -> Setup {
    Setup {
        slots: 40,
        epoch: testbed::EPOCH,
        jobs: testbed::jobs().to_vec(),
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

#[test]
fn invalid_vectors_are_dropped_as_malformed_and_valid_contributions_aggregate() {
    let mut p = testbed::bare_pipeline();
    let mut out = vec![0u8; OUT_LEN];
    let (mut aggregated, mut malformed) = (0, 0);
    for v in vectors() {
        let verdict = p.process_datagram(&v.bytes, &mut out);
        if v.expect_error.is_some() {
            // Types only the switch sends are not parsed: the reference drops even a broken
            // one as UnexpectedType, and so does the model.
            let switch_only = matches!(v.bytes.get(..2), Some([1, 0x02 | 0x11 | 0x13 | 0x16]))
                && v.bytes.len() >= 6;
            let reason = if switch_only {
                DropReason::UnexpectedType
            } else {
                DropReason::Malformed
            };
            assert_eq!(verdict, Verdict::Drop(reason), "[{}]", v.name);
            malformed += usize::from(!switch_only);
        } else if v.name.starts_with("contribution") && v.name != "contribution_k256" {
            assert_eq!(verdict, Verdict::Consumed, "[{}]", v.name);
            aggregated += 1;
        }
    }
    assert_eq!(aggregated, 4);
    assert!(malformed >= 15, "{malformed}");
    // The k = 256 vector's rank 255 is not in the test bed's job 0x1234.
    assert_eq!(p.job(0x1234).unwrap().counters.rejected, 1);
}

#[test]
fn framed_answers_carry_the_bare_answers() {
    let (mut framed, mut bare) = (testbed::pipeline(), testbed::bare_pipeline());
    let mut out = vec![0u8; OUT_LEN];
    let mut answered = 0;
    for v in vectors() {
        let (port, frame) = testbed::frame(&v.bytes);
        let frames = testbed::outputs(&mut framed, port, &frame);
        let expect = match bare.process_datagram(&v.bytes, &mut out) {
            Verdict::Unicast { len, .. } => (1, len),
            Verdict::Multicast { job, len, .. } => {
                (usize::from(framed.job(job).unwrap().config.world), len)
            }
            _ => (0, 0),
        };
        assert_eq!(frames.len(), expect.0, "[{}] copies", v.name);
        for (_, f) in &frames {
            assert_eq!(&f[TRANSPORT_LEN..], &out[..expect.1], "[{}]", v.name);
        }
        answered += frames.len();
    }
    assert!(answered > 10);
    assert_eq!(framed.counters(), bare.counters());
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
