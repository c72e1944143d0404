//! Loss recovery that asks before it resends (protocol.md §6.1), as properties of whole
//! simulated all-reduces over FIFO links with random loss.
//!
//! With the paper's timeout-only recovery one lost Contribution draws a resend from every
//! rank (P per loss; docs/simulation.md measured 7.9 at P = 8). Asking first makes every
//! resend answer one loss: a lost Contribution or Result needs exactly one, a lost Probe or
//! answer at most one, so resends never outnumber the packets the links lost.

use proptest::prelude::*;
use switchml_sim::{in_network, Dtype, LossOn, Scenario};

fn loss_on() -> impl Strategy<Value = LossOn> {
    prop_oneof![
        Just(LossOn::Both),
        Just(LossOn::Uplinks),
        Just(LossOn::Downlinks)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn resends_never_outnumber_the_lost_packets_and_sums_stay_exact(
        seed in any::<u64>(), workers in 2u16..=8, loss in 0.0f64..0.03, on in loss_on(),
        window in 4u16..=64, dtype in prop_oneof![Just(Dtype::F32), Just(Dtype::I32)],
    ) {
        let s = Scenario {
            workers,
            elements: 1 << 15,
            bucket_elements: 1 << 14,
            window,
            loss,
            loss_on: on,
            dtype,
            seed,
            ..Scenario::default()
        };
        let r = in_network::simulate(&s);
        prop_assert!(r.failures.is_empty(), "{:?}", r.failures);
        prop_assert!(r.completion.is_some());
        prop_assert_eq!(r.wrong_elements, 0);
        let (lost, tail_dropped) = r.network_drops();
        prop_assert_eq!(tail_dropped, 0);
        let p = r.protocol.unwrap();
        prop_assert!(p.retransmissions <= lost, "{} resends for {} lost: {:?}", p.retransmissions, lost, p);
    }
}
