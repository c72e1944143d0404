//! The golden switch scenarios (`tests/vectors/switch.txt`, rendered by the reference
//! switch) through the model: each scenario on a fresh model set up as its `setup:` line
//! says — 16 slots of `max_count` values (8, or 256 in the `multi_pass_*` scenarios, whose
//! Results take up to 4 passes), its one job, its epoch — and every datagram must
//! come out as the file says, byte for byte: consumed, dropped for the named reason, or the
//! named bytes multicast or unicast to the named rank.
//!
//! The datagrams are bare, so the model classifies them by the rank ↔ port mapping of
//! `Pipeline::add_job_with_rank_ports` (p4/README.md, "The `Aggregator` mapping").

use switchml_core::switch::Verdict as CoreVerdict;
use switchml_p4model::aggregator::to_core;
use switchml_p4model::headers::{CPU_PORT, TRANSPORT_LEN};
use switchml_p4model::{Config, Pipeline, SwitchAddr, Verdict, FRAME_OUT_LEN, OUT_LEN};
use switchml_p4model_harness::equivalence::{RefSlot, Reference};
use switchml_p4model_harness::testbed;
use switchml_tests::scenarios::{
    load, Outcome, Scenario, LARGE_MAX_COUNT, MAX_COUNT, POOL, SWITCH,
};

fn scenarios() -> Vec<Scenario> {
    load(SWITCH).expect("tests/vectors/switch.txt loads")
}

/// The model as the scenario's switch.
fn model_for(s: &Scenario) -> Pipeline {
    let mut p = Pipeline::new(Config {
        slots: POOL,
        jobs: 1,
        workers: usize::from(s.job.world),
        epoch: s.epoch,
        max_count: s.max_count,
        switch: SwitchAddr::default(),
    });
    p.add_job_with_rank_ports(s.job)
        .unwrap_or_else(|e| panic!("[{}] set-up: {e:?}", s.name));
    p
}

/// What the model does with one datagram, in the file's terms.
fn outcome(p: &mut Pipeline, input: &[u8]) -> Outcome {
    let mut out = vec![0u8; OUT_LEN];
    match to_core(p.process_datagram(input, &mut out)) {
        CoreVerdict::Consumed => Outcome::Consumed,
        CoreVerdict::Drop(reason) => Outcome::Drop(reason.name().to_string()),
        CoreVerdict::Multicast { len, .. } => Outcome::Multicast(out[..len].to_vec()),
        CoreVerdict::Unicast { rank, len, .. } => Outcome::Unicast(rank, out[..len].to_vec()),
        CoreVerdict::Up { .. } => unreachable!("the model has no child switch"),
    }
}

#[test]
fn every_scenario_step_gets_the_reference_outcome() {
    let scenarios = scenarios();
    let mut steps = 0;
    for s in &scenarios {
        let mut p = model_for(s);
        for (i, (input, expect)) in s.steps.iter().enumerate() {
            assert_eq!(&outcome(&mut p, input), expect, "[{}] step {i}", s.name);
            steps += 1;
        }
        assert_eq!(p.faults(), 0, "[{}]", s.name);
        if s.name.starts_with("multi_pass_") {
            assert!(p.recirculations() > 0, "[{}] took no second pass", s.name);
        }
    }
    assert!(
        scenarios.len() >= 9 && steps >= 50,
        "{} scenarios",
        scenarios.len()
    );
}

#[test]
fn the_scenarios_are_set_up_as_the_model_is_and_include_status() {
    for s in scenarios() {
        let expect = if s.name.starts_with("multi_pass_") {
            LARGE_MAX_COUNT
        } else {
            MAX_COUNT
        };
        assert_eq!(usize::from(s.max_count), expect, "[{}]", s.name);
    }
    // A StatusReply (type 0x16), and a Status of an unknown job dropped unanswered.
    let unanswered = scenarios()
        .iter()
        .flat_map(|s| s.steps.clone())
        .filter(|(input, out)| {
            input.get(1) == Some(&0x15) && *out == Outcome::Drop("unknown_job".into())
        })
        .count();
    let answers = |ty: u8, reply: u8| {
        scenarios()
            .iter()
            .flat_map(|s| s.steps.clone())
            .filter(|(input, out)| {
                input.get(1) == Some(&ty)
                    && matches!(out, Outcome::Unicast(_, b) if b.get(1) == Some(&reply))
            })
            .count()
    };
    assert!(answers(0x15, 0x16) > 0 && unanswered > 0);
}

/// The BMv2 replay's view of the scenarios: each on its framed bed (ranks at hosts), every
/// answer checked against the file by `testbed::scenario_frames`; the multi-pass Results
/// reach every rank's port; the liveness frame is answered on every bed.
#[test]
fn every_scenario_replays_as_frames_on_its_bed() {
    let mut frames_out = 0;
    for s in scenarios() {
        let steps = testbed::scenario_frames(&s).unwrap_or_else(|e| panic!("{e}"));
        // Every datagram a step, and the controller's frames on the CPU port steps of their
        // own (a Join's, a Status's).
        let from_hosts = steps.iter().filter(|st| st.port != CPU_PORT).count();
        assert_eq!(from_hosts, s.steps.len());
        for st in steps.iter().filter(|st| st.port == CPU_PORT) {
            let punted = st.name.strip_suffix("/cpu").expect("a controller's step");
            let before = steps
                .iter()
                .find(|b| b.name == punted)
                .expect("its datagram");
            assert!(
                before.out.iter().any(|(p, _)| *p == CPU_PORT),
                "{}: the controller answers what the pipeline sent it",
                st.name
            );
        }
        frames_out += steps.iter().map(|st| st.out.len()).sum::<usize>();
        if s.name.starts_with("multi_pass_") {
            let big = steps
                .iter()
                .filter(|st| st.out.len() == 3 && st.out[0].1.len() > TRANSPORT_LEN + 24 + 4 * 64)
                .count();
            assert!(big >= 1, "[{}] no multicast of more than 64 values", s.name);
        }
        let commands = testbed::scenario_cli_commands(&s);
        assert!(commands.contains(&format!(
            "set_switch_config 02:00:00:00:00:fe 10.0.0.254 {} {}\n",
            s.epoch, s.max_count
        )));
        let (port, frame) = testbed::liveness_frame();
        let answer = testbed::outputs(&mut testbed::scenario_pipeline(&s), port, &frame);
        assert_eq!(answer.len(), 1, "[{}] liveness", s.name);
        assert_eq!(answer[0].1[TRANSPORT_LEN + 1], 0x14, "an Abort");
    }
    assert!(frames_out > 100, "{frames_out}");
}

/// The four-rank multi-pass bed of the BMv2 replay (`testbed::multi_pass`, issue 31): the
/// model gives the reference's outcome on every step, bare and framed, and the bed keeps
/// what it is for: resends of uses of more than one block from ranks 1, 2 and 3, answered
/// after recirculating, each on its sender's port; Probes of such uses and Status from
/// ranks other than 0; a duplicate, a count mismatch and an overflow.
#[test]
fn the_four_rank_multi_pass_bed_answers_every_rank_on_its_port_after_several_passes() {
    let s = testbed::multi_pass::scenario();
    let mut bare = model_for(&s);
    for (i, (input, expect)) in s.steps.iter().enumerate() {
        assert_eq!(&outcome(&mut bare, input), expect, "[{}] step {i}", s.name);
    }
    assert_eq!(bare.faults(), 0);
    let steps = testbed::scenario_frames(&s).unwrap_or_else(|e| panic!("{e}"));
    let mut bed = testbed::scenario_pipeline(&s);
    // The ports of the unicast answers: resends' Results sent after more than one pass,
    // ProbeReplies, StatusReplies.
    let (mut resends, mut probes, mut status) = (Vec::new(), Vec::new(), Vec::new());
    let mut asked = 0;
    for st in &steps {
        let before = bed.recirculations();
        assert_eq!(
            testbed::outputs(&mut bed, st.port, &st.frame),
            st.out,
            "{}",
            st.name
        );
        let passes_after_0 = bed.recirculations() - before;
        // A controller's frame on the CPU port answers the datagram before it.
        if st.port != CPU_PORT {
            asked = st.frame[TRANSPORT_LEN + 1];
        }
        if let [(port, answer)] = st.out.as_slice() {
            match (asked, answer[TRANSPORT_LEN + 1]) {
                (0x01, 0x02) if passes_after_0 > 0 => resends.push(*port),
                (0x12, 0x13) => probes.push(*port),
                (0x15, 0x16) => status.push(*port),
                _ => {}
            }
        }
    }
    resends.sort_unstable();
    resends.dedup();
    assert_eq!(
        resends,
        [1, 2, 3],
        "ports of the multi-pass resends' answers"
    );
    assert!(probes.iter().any(|&p| p != 0), "{probes:?}");
    assert!(status.iter().any(|&p| p != 0), "{status:?}");
    let drops = |reason: &str| {
        s.steps
            .iter()
            .filter(|(_, o)| *o == Outcome::Drop(reason.into()))
            .count()
    };
    assert!(drops("duplicate") >= 1 && drops("count_mismatch") >= 1);
    let overflowed = steps.iter().any(|st| {
        st.out.len() == usize::from(s.job.world)
            && st.out[0].1[TRANSPORT_LEN + 9] & 0x01 != 0
            && st.out[0].1.len() > TRANSPORT_LEN + 24 + 4 * 64
    });
    assert!(
        overflowed,
        "no multicast Result of a multi-pass use with OVERFLOW"
    );
}

/// What the reference switch sends for each frame of a tiered bed (the bed's own switch,
/// fed the datagrams the bed's frames carry, in order), as (port, datagram) pairs: an
/// answer to the sender's port, a multicast to every worker lane's, what goes up (and the
/// Abort a child then owes, `poll_up`) to the parent's. The controller's frames on the CPU
/// port carry no datagram of the network's: nothing for them (their answers are the
/// datagram's, which came in before them).
fn reference_sends(b: &testbed::tiered::TieredBed) -> Vec<Vec<(u16, Vec<u8>)>> {
    let job = &b.bed.jobs[0];
    let mut pool = vec![RefSlot::IDLE; b.bed.config.slots];
    let mut reference = Reference::new(&mut pool, b.bed.config.epoch);
    reference
        .add_tiered_job(job.config, job.tier.tier())
        .expect("the bed's job");
    let lanes: Vec<u16> = job.workers.iter().map(|&(_, a)| a.port).collect();
    let up_port = job.tier.parent_port();
    let mut out = vec![0u8; Reference::OUT_LEN];
    b.steps
        .iter()
        .map(|st| {
            if st.port == CPU_PORT {
                return Vec::new();
            }
            let mut sends = match reference.process(&st.frame[TRANSPORT_LEN..], &mut out) {
                CoreVerdict::Unicast { len, .. } => vec![(st.port, out[..len].to_vec())],
                CoreVerdict::Multicast { len, .. } => {
                    lanes.iter().map(|&p| (p, out[..len].to_vec())).collect()
                }
                CoreVerdict::Up { len, .. } => vec![(up_port, out[..len].to_vec())],
                CoreVerdict::Consumed | CoreVerdict::Drop(_) => Vec::new(),
            };
            if let Some(CoreVerdict::Up { len, .. }) = reference.poll_up(&mut out) {
                sends.push((up_port, out[..len].to_vec()));
            }
            sends.sort();
            sends
        })
        .collect()
}

/// The tiered beds of the BMv2 replay (`testbed::tiered`, issue 31): each switch of the
/// tree sends, for every frame it got, what the reference switch sends for its datagram,
/// to the same ports; replayed alone on a fresh bed (as BMv2 replays it) it sends the same
/// frames; and the tree did what the beds are for: Joins, a sum of two blocks and a resend
/// across both levels, and an Abort from rank 1 that reaches ranks 2 and 3 as
/// `ParentFailed` by way of the parent.
#[test]
fn the_tiered_beds_agree_with_the_reference_and_replay_alone() {
    let beds = testbed::tiered::beds();
    assert_eq!(beds.len(), 3);
    for b in &beds {
        let reference = reference_sends(b);
        let mut alone = b.bed.pipeline();
        // A datagram and the controller's frames after it (`/cpu`) send, to the network,
        // what the reference sends for the datagram.
        let mut i = 0;
        while i < b.steps.len() {
            let group = 1 + b.steps[i + 1..]
                .iter()
                .take_while(|st| st.port == CPU_PORT)
                .count();
            let mut got: Vec<(u16, Vec<u8>)> = b.steps[i..i + group]
                .iter()
                .flat_map(|st| &st.out)
                .filter(|(p, _)| *p != CPU_PORT)
                .map(|(p, f)| (*p, f[TRANSPORT_LEN..].to_vec()))
                .collect();
            got.sort();
            assert_eq!(
                got, reference[i],
                "{} {}: the model and the reference",
                b.name, b.steps[i].name
            );
            i += group;
        }
        for st in &b.steps {
            let mut again = testbed::outputs(&mut alone, st.port, &st.frame);
            let mut clone = vec![0u8; FRAME_OUT_LEN];
            if let Some(Verdict::Up { port, len, .. }) = alone.poll_up_frame(&mut clone) {
                again.push((port, clone[..len].to_vec()));
            }
            assert_eq!(again, st.out, "{} {}: replayed alone", b.name, st.name);
        }
    }
    let [parent, child0, child1] = &beds[..] else {
        unreachable!()
    };
    // Up: each child sends its Join, its sum and (child 0) its Abort on port 3; the parent
    // gets them from both children.
    let up_types = |b: &testbed::tiered::TieredBed| -> Vec<u8> {
        let sent = b.steps.iter().flat_map(|st| &st.out);
        sent.filter(|(p, _)| *p == 3)
            .map(|(_, f)| f[TRANSPORT_LEN + 1])
            .collect()
    };
    assert_eq!(up_types(child0), [0x10, 0x01, 0x01, 0x14]);
    assert_eq!(up_types(child1), [0x10, 0x01]);
    let ports: Vec<u16> = parent.steps.iter().map(|st| st.port).collect();
    assert!(ports.contains(&0) && ports.contains(&1), "{ports:?}");
    // Down: every rank's host gets the sum of all four ranks' 20 values.
    let sum: Vec<u8> = (0..20)
        .flat_map(|i| (0..4).map(|r| 1000 * r + i).sum::<i32>().to_be_bytes())
        .collect();
    for child in [child0, child1] {
        let got: Vec<u16> = child
            .steps
            .iter()
            .flat_map(|st| &st.out)
            .filter(|(p, f)| *p < 3 && f[TRANSPORT_LEN + 1] == 0x02 && f.ends_with(&sum))
            .map(|(p, _)| *p)
            .collect();
        assert!(
            got.contains(&0) && got.contains(&1),
            "{}: {got:?}",
            child.name
        );
    }
    // Rank 3's resend is answered by child 1 from the parent's Result, on rank 3's port.
    assert!(child1.steps.iter().any(|st| st.port == 1
        && st.frame[TRANSPORT_LEN + 1] == 0x01
        && st.out.len() == 1
        && st.out[0].0 == 1
        && st.out[0].1.ends_with(&sum)));
    // Rank 1's Abort: up from child 0, down from the parent, ParentFailed (15) at child 1.
    let aborts_to_ranks = |b: &testbed::tiered::TieredBed| -> Vec<(u16, u8)> {
        let sent = b.steps.iter().flat_map(|st| &st.out);
        sent.filter(|(p, f)| *p < 3 && f[TRANSPORT_LEN + 1] == 0x14)
            .map(|(p, f)| (*p, f[TRANSPORT_LEN + 6]))
            .collect()
    };
    assert_eq!(aborts_to_ranks(parent).len(), 2);
    assert_eq!(aborts_to_ranks(child1), [(0, 15), (1, 15)]);
    assert_eq!(aborts_to_ranks(child0).len(), 2);
}
