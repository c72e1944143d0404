//! Building blocks for simulator tests: a switch with a job, lane configs, inputs from a
//! seed, and the host-side reference every f32 result must equal bit for bit.

use switchml_core::quant::{block_exponent_f32, Op, Scale, Unscale};
use switchml_core::switch::{JobConfig, Slot, Switch, DEFAULT_DEAD_AFTER};
use switchml_core::time::Duration;
use switchml_core::worker::Config;

use crate::sim::{lane_configs, Network, Rng, Sim};

/// Values per slot in the simulated switch.
pub const K: usize = 256;
/// The simulated switch: 256 values per slot, 64 ranks, 4 jobs.
pub type SimSwitch = Switch<'static, K, 1, 4>;

/// The job id every harness test uses.
pub const JOB: u16 = 7;
/// The key of job [`JOB`], which every lane config carries (protocol.md §4.1).
pub const KEY: u64 = 0x6A09_E667_F3BC_C908;

/// A switch over a fresh pool of `slots` slots with job [`JOB`] of `world` ranks on all of
/// them, announcing `epoch`.
pub fn switch_with_job(world: u16, slots: u16, epoch: u32) -> SimSwitch {
    let pool: &'static mut [Slot<K, 1>] =
        Box::leak(vec![Slot::IDLE; usize::from(slots)].into_boxed_slice());
    let mut s = Switch::new(pool, epoch);
    s.add_job(JobConfig {
        id: JOB,
        world,
        slot_lo: 0,
        slot_count: slots,
        key: KEY,
    })
    .expect("job fits");
    s
}

/// A lane config tuned for the simulator's microsecond network: 1 ms first timeout; the
/// job's key. [`Sim::new`] gives each rank its nonce.
pub fn sim_config(world: u16, window: u16, count: u16) -> Config {
    Config {
        window,
        count,
        rto: Duration::from_millis(1),
        max_rto: Duration::from_millis(16),
        retries: 80,
        join_interval: Duration::from_millis(2),
        join_timeout: Duration::from_secs(2),
        key: KEY,
        ..Config::new(JOB, 0, world)
    }
}

/// A simulation of `world` ranks × `lanes` lanes on a fresh switch that ends a run whose
/// rank goes silent, as the daemon's does (protocol.md §4.3).
pub fn sim(
    world: u16,
    lanes: u16,
    window: u16,
    count: u16,
    net: Network,
    seed: u64,
) -> Sim<SimSwitch> {
    let switch = switch_with_job(world, window * lanes, 1);
    let configs = lane_configs(sim_config(world, window, count), lanes);
    Sim::new(switch, configs, net, seed).with_dead_after(Some(DEFAULT_DEAD_AFTER))
}

/// A lossy, duplicating, reordering network.
pub fn lossy(drop: f64, duplicate: f64) -> Network {
    Network {
        drop,
        duplicate,
        delay_min: Duration::from_micros(20),
        delay_max: Duration::from_micros(400),
    }
}

/// Random f32 values of mixed magnitudes: zeros, subnormals, small and large, both signs.
pub fn f32_values(rng: &mut Rng, len: usize) -> Vec<f32> {
    (0..len)
        .map(|_| {
            let mag = match rng.between(0, 9) {
                0 => 0.0,
                1 => f32::from_bits(rng.between(1, 0x007F_FFFF) as u32),
                2..=4 => rng.unit() as f32,
                5..=7 => (rng.unit() as f32) * 1e-3,
                _ => (rng.unit() as f32) * 1e4,
            };
            if rng.next_u64() & 1 == 0 {
                mag
            } else {
                -mag
            }
        })
        .collect()
}

/// Random i32 values whose sum over `world` ranks cannot overflow.
pub fn i32_values(rng: &mut Rng, len: usize, world: u16) -> Vec<i32> {
    let bound = (i32::MAX / i32::from(world.max(1))) as u64;
    (0..len)
        .map(|_| (rng.between(0, 2 * bound) as i64 - bound as i64) as i32)
        .collect()
}

/// What every rank must get back for f32 inputs: per chunk of `count`, the job-wide max
/// exponent, each rank's values quantized, summed with wrapping int32, and scaled back.
pub fn reference_f32(inputs: &[Vec<f32>], count: usize, op: Op) -> Vec<f32> {
    let n = inputs.len() as u16;
    let len = inputs.first().map_or(0, Vec::len);
    let mut out = vec![0f32; len];
    for lo in (0..len).step_by(count.max(1)) {
        let hi = (lo + count).min(len);
        let exp = inputs
            .iter()
            .map(|x| block_exponent_f32(&x[lo..hi]))
            .max()
            .unwrap_or(0);
        let (scale, unscale) = (Scale::new(n, exp), Unscale::new(n, exp, op));
        for (i, o) in out[lo..hi].iter_mut().enumerate() {
            let sum = inputs
                .iter()
                .fold(0i32, |s, x| s.wrapping_add(scale.quantize_value(x[lo + i])));
            *o = unscale.dequantize_value(sum);
        }
    }
    out
}

/// The largest error protocol.md §5.2 allows for one element, against the f64 sum.
pub fn error_bound(inputs: &[Vec<f32>], count: usize, i: usize, exact: f64, op: Op) -> f64 {
    let n = inputs.len() as f64;
    let lo = i / count * count;
    let hi = (lo + count).min(inputs[0].len());
    let exp = inputs
        .iter()
        .map(|x| block_exponent_f32(&x[lo..hi]))
        .max()
        .unwrap_or(0);
    if exp == 0 {
        return 0.0;
    }
    // n units of 2^(e + p − 31), p = max(1, ⌈log₂ n⌉).
    let p = n.log2().ceil().max(1.0) as i32;
    let unit = 2f64.powi(i32::from(exp) - 127 + p - 31);
    let (quantization, rounding) = match op {
        Op::Sum => (n * unit, 2f64.powi(-24)),
        Op::Average if (n as u64).is_power_of_two() => (unit, 2f64.powi(-24)),
        Op::Average => (unit, 3.0 * 2f64.powi(-24)),
    };
    // Plus the rounding to f32, and the smallest subnormal for results near zero.
    quantization + (exact.abs() + quantization) * rounding + 2f64.powi(-149)
}
