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
use switchml_p4model::headers::TRANSPORT_LEN;
use switchml_p4model::{testbed, Config, Pipeline, SwitchAddr, OUT_LEN};
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
        assert_eq!(steps.len(), s.steps.len());
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
