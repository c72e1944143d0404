//! The Rust side of the co-simulation without the RTL: the comparison catches every kind
//! of difference and names the packet; the scripts carry the control plane's register
//! writes; the random sequences reach every data-path verdict.

use switchml_core::switch::{DropReason, JobConfig};
use switchml_fpga_cosim::session::{drop_index, goes_to_host};
use switchml_fpga_cosim::{compare, golden, random, Expected, RtlRun, Session};

/// What a perfect RTL would write for `expected`.
fn perfect(expected: &Expected) -> RtlRun {
    let mut run = RtlRun::default();
    let mut counters = vec![0u64; 20];
    for (input, outcome) in expected.inputs.iter().zip(&expected.outcomes) {
        match outcome {
            None => run.host.push(input.clone()),
            Some((v, a)) => {
                run.verdicts.push(*v);
                if let Some(a) = a {
                    for c in 0..a.copies {
                        let mut copy = a.clone();
                        copy.copies = 1;
                        if a.multicast {
                            copy.rank = c;
                        }
                        run.answers.push(copy);
                    }
                }
                counters[16] += 1;
                let i = match v.kind {
                    0 => 17,
                    1 => usize::from(v.reason),
                    2 => 18,
                    _ => 19,
                };
                counters[i] += 1;
            }
        }
    }
    run.counters = counters;
    run.job_counters = expected.job_counters.clone();
    run
}

fn small_run() -> Expected {
    random::sequence::<8>(42, 3000, 0).finish().1
}

#[test]
fn a_perfect_run_compares_clean() {
    let expected = small_run();
    let s = compare(&expected, &perfect(&expected)).expect("no mismatch");
    assert_eq!(s.packets, 3000);
    assert!(s.answers > 0 && s.drops > 0 && s.host > 0);
}

#[test]
fn one_wrong_answer_byte_names_its_packet() {
    let expected = small_run();
    // The packets answered, and where their copies start among the RTL's answers.
    let mut answered = Vec::new();
    let mut at = 0;
    for (i, o) in expected.outcomes.iter().enumerate() {
        if let Some((_, Some(a))) = o {
            answered.push((i, at, a.copies));
            at += usize::from(a.copies);
        }
    }
    // A multicast to several ranks: change a byte in its last copy only.
    let &(packet, first, copies) = answered
        .iter()
        .rev()
        .find(|(_, _, n)| *n > 1)
        .expect("a multicast to several ranks");
    let mut rtl = perfect(&expected);
    let copy = &mut rtl.answers[first + usize::from(copies) - 1].bytes;
    let last = copy.len() - 1;
    copy[last] ^= 1;
    let m = compare(&expected, &rtl).expect_err("a changed byte is a mismatch");
    assert_eq!(m.packet, Some(packet));
    assert_eq!(m.input, expected.inputs[packet]);
    assert_ne!(m.expected, m.got);
}

#[test]
fn a_wrong_drop_reason_a_lost_host_packet_and_a_wrong_counter_are_mismatches() {
    let expected = small_run();
    let mut rtl = perfect(&expected);
    let d = rtl.verdicts.iter().position(|v| v.kind == 1).unwrap();
    rtl.verdicts[d].reason ^= 1;
    assert!(compare(&expected, &rtl).is_err());

    let mut rtl = perfect(&expected);
    rtl.host.pop();
    assert!(compare(&expected, &rtl).is_err());

    let mut rtl = perfect(&expected);
    rtl.counters[drop_index(DropReason::Stale) as usize] += 1;
    let m = compare(&expected, &rtl).expect_err("counters differ");
    assert_eq!(m.packet, None);

    let mut rtl = perfect(&expected);
    rtl.job_counters[0][7] += 1;
    assert!(
        compare(&expected, &rtl).is_err(),
        "a job's overflows differ"
    );
}

#[test]
fn the_harness_output_format_parses() {
    let text = "v 1 8 3\nv 3 0 2\no 0 2 0102\nh 0110\nmark 77\nc 0 5\n";
    let run = RtlRun::parse(text).unwrap();
    assert_eq!(run.verdicts.len(), 2);
    assert_eq!(run.verdicts[0].reason, 8);
    assert_eq!(run.answers[0].bytes, vec![1, 2]);
    assert!(!run.answers[0].multicast && run.answers[0].rank == 2);
    assert_eq!(run.host, vec![vec![1, 0x10]]);
    assert_eq!((run.marks[0], run.counters[0]), (77, 5));
    assert!(RtlRun::parse("x 1\n").is_err());
}

#[test]
fn control_types_go_to_the_host_and_a_join_writes_the_session_into_the_table() {
    assert!(goes_to_host(&[1, 0x10, 0, 7, 0, 0]));
    assert!(
        !goes_to_host(&[1, 0x10, 0, 7, 0]),
        "shorter than the prefix: malformed"
    );
    assert!(
        !goes_to_host(&[2, 0x10, 0, 7, 0, 0]),
        "version 2: malformed"
    );
    assert!(
        !goes_to_host(&[1, 0x12, 0, 7, 0, 0]),
        "a Probe is the data path's"
    );

    let job = JobConfig {
        id: 7,
        world: 1,
        slot_lo: 3,
        slot_count: 2,
        key: 9,
    };
    let mut s = Session::<8>::new(5, &[job], 0);
    let join = switchml_core::wire::Message::Join(
        switchml_core::wire::JoinRepr {
            job: 7,
            rank: 0,
            world: 1,
            slot_lo: 0,
            slot_count: 2,
            lanes: 1,
            count: 8,
            nonce: 0xABCD,
            cookie: 0,
            tag: [0; 16],
        }
        .sign(9),
    );
    let mut b = vec![0u8; join.buffer_len()];
    join.emit(&mut b).unwrap();
    s.packet(&b);
    let session = s.reference().job(7).unwrap().session();
    let (script, expected) = s.finish();
    assert_eq!(expected.outcomes, vec![None]);
    assert!(script.starts_with("seed 0\ncfg 0 5\ncfg 1 8\nclear 3 2\ncfg 5 0\n"));
    assert!(script.contains("cfg 10 80000007\ncfg 11 10002\ncfg 12 3\ncfg 13 0\n"));
    let after_join = script.split("pkt ").nth(1).unwrap();
    assert!(after_join.contains(&format!("cfg 13 {session:x}\n")));
}

#[test]
fn random_sequences_are_seeded_and_reach_every_data_path_verdict() {
    let (a, ea) = random::sequence::<8>(7, 20_000, 3).finish();
    let (b, _) = random::sequence::<8>(7, 20_000, 3).finish();
    assert_eq!(a, b);
    let kinds: std::collections::BTreeSet<(u8, u8)> = ea
        .outcomes
        .iter()
        .flatten()
        .map(|(v, _)| (v.kind, if v.kind == 1 { v.reason } else { 0 }))
        .collect();
    for r in [
        DropReason::Malformed,
        DropReason::UnknownType,
        DropReason::UnexpectedType,
        DropReason::UnknownJob,
        DropReason::UnknownRank,
        DropReason::SlotRange,
        DropReason::CountTooLarge,
        DropReason::BadVersion,
        DropReason::Stale,
        DropReason::Duplicate,
        DropReason::CountMismatch,
        DropReason::BadSession,
    ] {
        assert!(kinds.contains(&(1, drop_index(r))), "no {r} drop");
    }
    for kind in [0, 2, 3] {
        assert!(kinds.contains(&(kind, 0)), "no verdict of kind {kind}");
    }
}

#[test]
fn the_golden_vectors_make_scripts_the_reference_still_agrees_with() {
    let cases = golden::scenario_cases(1).expect("the reference renders switch.txt");
    assert_eq!(cases.len(), 20);
    // The wire vectors reach the slots: Contributions absorbed, then (second pass) dropped
    // as duplicates; the Probe answered.
    let wire = golden::wire_case(1).unwrap();
    let verdicts: Vec<_> = wire
        .expected
        .outcomes
        .iter()
        .flatten()
        .map(|(v, _)| *v)
        .collect();
    assert!(verdicts.iter().any(|v| v.kind == 0));
    let duplicate = drop_index(DropReason::Duplicate);
    assert!(verdicts
        .iter()
        .any(|v| v.kind == 1 && v.reason == duplicate));
    assert!(verdicts.iter().any(|v| v.kind == 3));
}
