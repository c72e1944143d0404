//! The golden switch scenarios (`tests/vectors/switch.txt`, rendered by the reference
//! switch) through the model: each scenario on a fresh model set up as its `setup:` line
//! says — 16 slots of `max_count` values, its one job, its epoch — and every datagram must
//! come out as the file says, byte for byte: consumed, dropped for the named reason, or the
//! named bytes multicast or unicast to the named rank.
//!
//! The datagrams are bare, so the model classifies them by the rank ↔ port mapping of
//! `Pipeline::add_job_with_rank_ports` (p4/README.md, "The `Aggregator` mapping").

use switchml_core::switch::Verdict as CoreVerdict;
use switchml_p4model::aggregator::to_core;
use switchml_p4model::{Config, Pipeline, SwitchAddr, OUT_LEN};
use switchml_tests::scenarios::{load, Outcome, Scenario, MAX_COUNT, POOL, SWITCH};

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
        max_count: MAX_COUNT as u16,
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
    }
    assert!(
        scenarios.len() >= 9 && steps >= 50,
        "{} scenarios",
        scenarios.len()
    );
}

#[test]
fn the_scenarios_are_set_up_as_the_model_is_and_include_status() {
    for line in SWITCH.lines().filter(|l| l.starts_with("setup:")) {
        assert!(line.contains(&format!(" max_count={MAX_COUNT} ")), "{line}");
    }
    // A StatusReply (type 0x16) and a refused Status (an Abort answering type 0x15).
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
    assert!(answers(0x15, 0x16) > 0 && answers(0x15, 0x14) > 0);
}
