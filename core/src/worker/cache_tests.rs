//! The exponent cache changes nothing on the wire: a tensor submitted with one
//! ([`WithExponents`]) and the same tensor without one make the same datagrams, byte for
//! byte, resends included, and come back with the same values; a non-finite one is refused
//! with the same error either way.
//!
//! ```text
//!   worker (rank 0 of 1) ──▶ switch (job 3, `window` slots) ──▶ back, every 5th datagram lost
//! ```

extern crate std;

use std::vec;
use std::vec::Vec;

use half::{bf16, f16};
use proptest::prelude::*;

use super::*;
use crate::quant::{Elements, WithExponents};
use crate::switch::{JobConfig, Slot, Switch, Verdict};

/// The element type of a case.
#[derive(Debug, Clone, Copy)]
enum Kind {
    F32,
    F16,
    Bf16,
}

/// A case's tensor in its element type.
#[derive(Debug, Clone)]
enum Values {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
}

impl Values {
    /// `x` in `kind`; a value beyond the type's range becomes its largest.
    fn new(kind: Kind, x: &[f32]) -> Values {
        let h = |v| Some(f16::from_f32(v)).filter(|h| h.is_finite());
        let b = |v| Some(bf16::from_f32(v)).filter(|b| b.is_finite());
        match kind {
            Kind::F32 => Values::F32(x.to_vec()),
            Kind::F16 => Values::F16(x.iter().map(|&v| h(v).unwrap_or(f16::MAX)).collect()),
            Kind::Bf16 => Values::Bf16(x.iter().map(|&v| b(v).unwrap_or(bf16::MAX)).collect()),
        }
    }

    /// Make element `at` `bad` (a NaN or an infinity).
    fn spoil(&mut self, at: usize, bad: f32) {
        match self {
            Values::F32(x) => x[at] = bad,
            Values::F16(x) => x[at] = f16::from_f32(bad),
            Values::Bf16(x) => x[at] = bf16::from_f32(bad),
        }
    }

    /// The bit patterns, which compare NaN and -0.0 as they are.
    fn bits(&self) -> Vec<u32> {
        match self {
            Values::F32(x) => x.iter().map(|v| v.to_bits()).collect(),
            Values::F16(x) => x.iter().map(|v| v.to_bits().into()).collect(),
            Values::Bf16(x) => x.iter().map(|v| v.to_bits().into()).collect(),
        }
    }

    fn elements(&mut self) -> Elements<'_> {
        match self {
            Values::F32(x) => Elements::F32(x),
            Values::F16(x) => Elements::F16(x),
            Values::Bf16(x) => Elements::Bf16(x),
        }
    }
}

/// How a case is submitted.
#[derive(Debug, Clone, Copy, PartialEq)]
enum How {
    /// `submit`, no cache.
    Plain,
    /// `submit` with a cache.
    Cached,
    /// `submit_finite` with a cache of `0xFF` bytes, which it must not read.
    FiniteIgnoresCache,
    /// `submit_scanned` with a cache the caller filled from the elements.
    Scanned,
    /// `submit_scanned` with a cache of `0xFF` bytes, sent as they are.
    ScannedWrong,
}

/// What a run saw: every datagram the worker sent, the tensor's bits afterwards, its result.
type Run = (Vec<Vec<u8>>, Vec<u32>, Result<(), TensorError>);

/// All-reduce `values` alone (world 1) through a reference switch, `count` values a chunk
/// over `window` slots, losing every 5th datagram either way so that resends happen.
fn run(mut values: Values, count: u16, window: u16, how: How) -> Run {
    let mut cache = vec![0xffu8; 64];
    if how == How::Scanned {
        let _ = values
            .elements()
            .finite_block_exponents(count.into(), &mut cache);
    }
    let exponents = match how {
        How::Plain => &mut cache[..0],
        _ => &mut cache[..],
    };
    let config = Config {
        window,
        count,
        rto: Duration::from_millis(1),
        max_rto: Duration::from_millis(2),
        ..Config::new(3, 0, 1)
    };
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut switch = Switch::<8, 1, 1>::new(&mut pool, 1);
    switch
        .add_job(JobConfig {
            id: 3,
            world: 1,
            slot_lo: 0,
            slot_count: 4,
            key: 0,
        })
        .unwrap();
    let mut w = Worker::<_, 4, 1>::new(config).unwrap();
    let mut tensor = Some(WithExponents {
        tensor: values.elements(),
        exponents,
    });
    let (mut sent, mut now, mut submitted) = (Vec::new(), Instant::ZERO, None);
    let (mut buf, mut out) = ([0u8; 64], [0u8; 512]);
    let result = loop {
        if let Some(t) = tensor.take_if(|_| w.is_running()) {
            let id = match how {
                How::Plain | How::Cached => w.submit(now, t, Op::Sum),
                How::FiniteIgnoresCache => w.submit_finite(now, t, Op::Sum),
                How::Scanned | How::ScannedWrong => w.submit_scanned(now, t, Op::Sum),
            };
            submitted = Some(id.map_err(|e| e.kind).unwrap());
        }
        while let Some(len) = w.poll_transmit(now, &mut buf) {
            sent.push(buf[..len].to_vec());
            if sent.len() % 5 == 0 {
                continue;
            }
            if let Verdict::Multicast { len, .. } | Verdict::Unicast { len, .. } =
                switch.process(&buf[..len], &mut out)
            {
                w.handle_packet(now, &out[..len]);
            }
        }
        match w.poll_event() {
            Some(Event::Done { id, result, .. }) if Some(id) == submitted => break result,
            Some(_) => continue,
            None => {}
        }
        assert!(now < Instant::from_millis(10_000), "the run does not end");
        now = w
            .poll_timeout()
            .unwrap_or(now + Duration::from_millis(1))
            .max(now);
        w.handle_timeout(now);
    };
    drop(w);
    (sent, values.bits(), result)
}

/// Finite values of every magnitude, zeros and subnormals included.
fn finite() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(0.0f32),
        (0u32..0x7f80_0000, any::<bool>()).prop_map(|(b, s)| {
            let x = f32::from_bits(b);
            if s {
                -x
            } else {
                x
            }
        }),
        (-4.0f32..4.0),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::F32), Just(Kind::F16), Just(Kind::Bf16)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_cache_changes_no_byte_on_the_wire(
        kind in kind(),
        x in proptest::collection::vec(finite(), 0..60),
        count in 1u16..=8,
        window in 1u16..=4,
    ) {
        let values = Values::new(kind, &x);
        let plain = run(values.clone(), count, window, How::Plain);
        for how in [How::Cached, How::FiniteIgnoresCache, How::Scanned] {
            let other = run(values.clone(), count, window, how);
            prop_assert_eq!(&other, &plain, "{:?}", how);
        }
        // The cache is read: wrong bytes in it change the exponents sent.
        let mut exps = vec![0xffu8; x.len().div_ceil(count.into())];
        let mut v = values.clone();
        prop_assert!(v.elements().finite_block_exponents(count.into(), &mut exps).is_ok());
        let wrong = run(values, count, window, How::ScannedWrong);
        if exps.iter().any(|&e| e != 0xff) {
            prop_assert_ne!(wrong.0, plain.0);
        }
    }

    #[test]
    fn a_non_finite_tensor_is_refused_alike_with_or_without_a_cache(
        kind in kind(),
        x in proptest::collection::vec(finite(), 1..60),
        at in any::<prop::sample::Index>(),
        bad in prop_oneof![Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY)],
        count in 1u16..=8,
    ) {
        let at = at.index(x.len());
        let non_finite = NonFinitePolicy::Refuse;
        let config = Config { window: 2, count, non_finite, ..Config::new(3, 0, 1) };
        let mut errors = Vec::new();
        for cache_len in [0usize, 64] {
            let mut values = Values::new(kind, &x);
            values.spoil(at, bad);
            let before = values.bits();
            let mut cache = vec![0u8; cache_len];
            let mut w = Worker::<_, 4, 1>::new(config).unwrap();
            let e = w
                .submit(
                    Instant::ZERO,
                    WithExponents { tensor: values.elements(), exponents: &mut cache[..] },
                    Op::Sum,
                )
                .unwrap_err();
            errors.push(e.kind);
            prop_assert_eq!(values.bits(), before);
        }
        let want = SubmitErrorKind::NonFinite(crate::quant::NonFinite { index: at });
        prop_assert_eq!(errors, vec![want, want]);
    }
}
