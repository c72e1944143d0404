//! Two levels of switches (protocol.md §7) in the simulator: every rank gets the exact sum
//! of every rank's inputs whatever is lost on either level, and the second level costs
//! what its extra hop costs.

use proptest::prelude::*;
use switchml_sim::tiered::{self, Tree};
use switchml_sim::{in_network, Dtype, Scenario, SwitchModel};

fn small(workers: u16, dtype: Dtype) -> Scenario {
    Scenario {
        workers,
        elements: 1 << 14,
        bucket_elements: 1 << 13,
        count: 64,
        window: 16,
        rto_us: 200,
        max_rto_us: 4000,
        dtype,
        ..Scenario::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Trees of 2–4 children of 1–4 ranks each, loss up to 10% on the ranks' links and on
    /// the children's, any seed: every rank finishes within the bound with the exact sum
    /// (int32: every element `Σ (r + 1)`; f32: the same over 4, exact in the quantization,
    /// so every rank's floats are the same bits; every rank's values differ, so a double
    /// count would show), within 2 s of simulated time (about 120 ms at 10% on both).
    #[test]
    fn every_rank_gets_the_exact_sum_through_two_lossy_levels(
        children in 2u16..=4,
        per_child in 1u16..=4,
        extra in 0u16..4,
        rank_loss in 0.0f64..0.1,
        tier_loss in 0.0f64..0.1,
        int in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let workers = children * per_child + extra.min(children - 1);
        let dtype = if int { Dtype::I32 } else { Dtype::F32 };
        let s = Scenario { loss: rank_loss, seed, ..small(workers, dtype) };
        let tree = Tree { children, loss: tier_loss, bits_per_sec: 0 };
        let r = tiered::simulate(&s, &tree);
        prop_assert!(r.failures.is_empty(), "{:?}", r.failures);
        prop_assert_eq!(r.wrong_elements, 0);
        let t = r.completion.expect("every rank finishes");
        prop_assert!(t < 2_000_000_000, "{} ns", t);
        // Every use completed at the parent once: no double count made an extra one, no
        // rank's result was missing.
        let p = r.protocol.unwrap();
        prop_assert_eq!(p.results, u64::from(workers) * (p.results / u64::from(workers)));
    }
}

#[test]
fn loss_between_the_switches_alone_is_recovered_by_the_workers_resends() {
    let s = Scenario {
        seed: 7,
        ..small(12, Dtype::I32)
    };
    let tree = Tree {
        children: 3,
        loss: 0.05,
        bits_per_sec: 0,
    };
    let r = tiered::simulate(&s, &tree);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.wrong_elements, 0);
    let between: u64 = r.uplinks[12..]
        .iter()
        .chain(&r.downlinks[12..])
        .map(|l| l.lost)
        .sum();
    assert_eq!(
        r.network_drops().0,
        between,
        "the ranks' links lose nothing"
    );
    let p = r.protocol.unwrap();
    assert!(between > 0 && p.retransmissions > 0, "{p:?}");
    assert!(p.switch_retransmit_replies > 0, "{p:?}");
}

#[test]
fn without_loss_two_levels_take_within_a_tenth_of_one_levels_time() {
    // 16 ranks as 4 × 4: the same bytes per rank link as one level; each slot's round trip
    // crosses two more links, so the window covers less of the bandwidth-delay product.
    let s = Scenario {
        elements: 1 << 18,
        bucket_elements: 1 << 17,
        window: 128,
        ..Scenario::default()
    };
    let one = in_network::simulate(&s);
    let tree = Tree {
        children: 4,
        loss: 0.0,
        bits_per_sec: 0,
    };
    let two = tiered::simulate(&s, &tree);
    assert_eq!((one.wrong_elements, two.wrong_elements), (0, 0));
    let (t1, t2) = (one.completion.unwrap(), two.completion.unwrap());
    assert!(t2 >= t1, "{t2} < {t1}");
    assert!(10 * t2 < 11 * t1, "{t2} vs {t1}");
    let p = two.protocol.unwrap();
    assert_eq!((p.retransmissions, p.switch_duplicates), (0, 0));
}

#[test]
fn a_thousand_and_twenty_four_ranks_as_32_children_of_32_under_loss() {
    let s = Scenario {
        workers: 1024,
        elements: 1 << 12,
        bucket_elements: 1 << 12,
        count: 256,
        window: 8,
        loss: 0.001,
        ..Scenario::default()
    };
    let tree = Tree {
        children: 32,
        loss: 0.01,
        bits_per_sec: 0,
    };
    let r = tiered::simulate(&s, &tree);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.wrong_elements, 0);
    assert!(r.completion.is_some());
    assert!(r.network_drops().0 > 0, "loss happened");
}

/// The P4 model as every switch of the tree: the same packets and the same losses give the
/// same times and counters as the reference switch, whatever is lost on either level.
#[test]
fn the_p4_model_makes_the_reference_switchs_decisions_on_both_levels() {
    for (seed, children, workers) in [(3, 2, 5), (11, 3, 9), (29, 4, 8)] {
        let s = Scenario {
            loss: 0.02,
            seed,
            // The P4 programs cannot offer PROBE_RESULTS.
            probe_results: false,
            ..small(workers, Dtype::I32)
        };
        let tree = Tree {
            children,
            loss: 0.02,
            bits_per_sec: 0,
        };
        let reference = tiered::simulate(&s, &tree);
        let model = tiered::simulate(
            &Scenario {
                switch: SwitchModel::P4Model,
                ..s
            },
            &tree,
        );
        assert!(reference.failures.is_empty() && model.failures.is_empty());
        assert_eq!(model.wrong_elements, 0);
        let p = model.protocol.expect("counters");
        assert!(
            p.switch_retransmit_replies > 0 || p.switch_duplicates > 0,
            "{p:?}"
        );
        assert_eq!(
            (
                reference.completion,
                reference.protocol,
                &reference.uplinks,
                &reference.downlinks
            ),
            (
                model.completion,
                model.protocol,
                &model.uplinks,
                &model.downlinks
            ),
            "seed {seed}"
        );
    }
}
