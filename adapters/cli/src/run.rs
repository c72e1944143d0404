//! One rank's share of a demo, worker or bench run: make the input, all-reduce it a number
//! of times (timed), and check the last result against the exact reference.

use std::sync::Barrier;
use std::time::{Duration, Instant, SystemTime};

use half::{bf16, f16};
use switchml_core::worker::Stats;
use switchml_worker::{Communicator, Element, Error, Op, Timing};

use crate::inputs::{
    bf16_input, check_bf16, check_f16, check_f32, check_i32, f16_input, f32_input, i32_input, Check,
};

/// The element type of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Dtype {
    /// IEEE binary32 floats, quantized per block.
    F32,
    /// 32-bit integers, summed exactly.
    I32,
    /// IEEE binary16 floats, quantized per block through f32.
    F16,
    /// bfloat16 floats, quantized per block through f32.
    Bf16,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::F16 | Dtype::Bf16 => 2,
        }
    }
}

/// What each rank does.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Elements per tensor.
    pub elements: usize,
    /// All-reduces of the same input, back to back.
    pub iterations: u32,
    /// Element type.
    pub dtype: Dtype,
    /// Sum or average.
    pub op: Op,
    /// Input seed.
    pub seed: u64,
    /// Whether to check the result against the exact reference.
    pub verify: bool,
    /// One untimed all-reduce before the timed ones, as the Gloo baseline does per size:
    /// first-touch page faults of the packet buffers and the slot pool's first use are
    /// setup, not all-reduce time.
    pub warmup: bool,
}

/// What one rank measured.
#[derive(Debug, Clone)]
pub struct RankRun {
    /// Time spent inside all-reduce calls.
    pub elapsed: Duration,
    /// The lanes' counters at the end.
    pub stats: Stats,
    /// Each lane's round-trip estimate and retransmission timeout at the end.
    pub timing: Vec<Timing>,
    /// The check of the last result, if asked for.
    pub check: Option<Check>,
    /// The last result (ranks compare theirs with rank 0's; `--output` writes it).
    pub result: Values,
    /// The process's CPU time from the first iteration's start to the last one's end (all
    /// threads of the process: with a barrier, every rank's and the switch's).
    pub cpu: Option<Duration>,
    /// Wall-clock time at the first iteration's start and at the last one's end, so that
    /// a harness can line the timed region up with what it sampled meanwhile.
    pub window: Option<(SystemTime, SystemTime)>,
}

/// One rank's buffers, made before the rank joins: a rank that generated (or copied, or
/// first touched) its tensor after the join would hold the others' first all-reduce up by
/// that long, and they would count the wait as all-reduce time.
#[derive(Debug, Clone)]
pub enum Input {
    /// Floats in [-1, 1).
    F32(Buffers<f32>),
    /// Integers whose sum over the world fits.
    I32(Buffers<i32>),
    /// Half floats in [-1, 1).
    F16(Buffers<f16>),
    /// bfloat16s in [-1, 1).
    Bf16(Buffers<bf16>),
}

/// A tensor of any element type: a rank's last result.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// f32 values.
    F32(Vec<f32>),
    /// i32 values.
    I32(Vec<i32>),
    /// f16 values.
    F16(Vec<f16>),
    /// bf16 values.
    Bf16(Vec<bf16>),
}

/// The tensor all-reduced in place, and a pristine copy to restore it from between
/// iterations (only when there are several and the input matters: see [`Buffers::new`]).
#[derive(Debug, Clone)]
pub struct Buffers<T> {
    data: Vec<T>,
    pristine: Option<Vec<T>>,
}

impl<T: Copy> Buffers<T> {
    /// `restore`: whether each all-reduce must start from the input again — for a check of
    /// the last result, and for types whose range a sum of sums can leave. An unchecked f32
    /// tensor is all-reduced in place, as the Gloo baseline's is (its values grow by the
    /// world size each time, far inside f32's range), so the timed region's CPU holds no
    /// copy the baseline does not make.
    fn new(data: Vec<T>, all_reduces: u32, restore: bool) -> Self {
        let pristine = (all_reduces > 1 && restore).then(|| data.clone());
        Buffers { data, pristine }
    }

    /// Put the input back before iteration `i` (the first finds it untouched).
    fn reset(&mut self, i: u32) {
        if let (true, Some(p)) = (i > 0, &self.pristine) {
            self.data.copy_from_slice(p);
        }
    }
}

impl Input {
    /// Make rank `rank`'s input for `w` in a world of `world` ranks.
    pub fn new(w: &Workload, rank: u16, world: u16) -> Input {
        let all_reduces = w.iterations + u32::from(w.warmup);
        // Sums of sums grow by `world` each time: 2^100 is far inside f32's range.
        let growth = f64::from(all_reduces) * f64::from(world.max(2)).log2();
        let restore = w.verify || w.dtype != Dtype::F32 || growth > 100.0;
        match w.dtype {
            Dtype::F32 => Input::F32(Buffers::new(
                f32_input(w.seed, rank, w.elements),
                all_reduces,
                restore,
            )),
            Dtype::I32 => Input::I32(Buffers::new(
                i32_input(w.seed, rank, world, w.elements),
                all_reduces,
                restore,
            )),
            Dtype::F16 => Input::F16(Buffers::new(
                f16_input(w.seed, rank, w.elements),
                all_reduces,
                restore,
            )),
            Dtype::Bf16 => Input::Bf16(Buffers::new(
                bf16_input(w.seed, rank, w.elements),
                all_reduces,
                restore,
            )),
        }
    }
}

/// Run `w` on `comm` with `input` (from [`Input::new`] for this rank). `barrier` lines the
/// ranks of one process up before each iteration; `tick` is called after each iteration
/// with its number and duration.
pub fn run_rank(
    comm: &Communicator,
    w: &Workload,
    input: Input,
    barrier: Option<&Barrier>,
    tick: &(dyn Fn(u32, Duration) + Sync),
) -> Result<RankRun, Error> {
    let world = comm.world_size();
    let average = w.op == Op::Average;
    // Lazily: a check is a pass over the result against the reference, slower than the
    // all-reduce, and wasted when nobody asked.
    let check = |c: &dyn Fn() -> Check| w.verify.then(c);
    let (timed, check, result) = match input {
        Input::F32(b) => {
            let (t, x) = iterate(comm, w, w.op, b, barrier, tick)?;
            (
                t,
                check(&|| check_f32(&x, w.seed, world, average)),
                Values::F32(x),
            )
        }
        Input::I32(b) => {
            let (t, x) = iterate(comm, w, Op::Sum, b, barrier, tick)?;
            (t, check(&|| check_i32(&x, w.seed, world)), Values::I32(x))
        }
        Input::F16(b) => {
            let (t, x) = iterate(comm, w, w.op, b, barrier, tick)?;
            (
                t,
                check(&|| check_f16(&x, w.seed, world, average)),
                Values::F16(x),
            )
        }
        Input::Bf16(b) => {
            let (t, x) = iterate(comm, w, w.op, b, barrier, tick)?;
            (
                t,
                check(&|| check_bf16(&x, w.seed, world, average)),
                Values::Bf16(x),
            )
        }
    };
    Ok(RankRun {
        elapsed: timed.elapsed,
        stats: comm.stats(),
        timing: comm.timing(),
        check,
        result,
        cpu: Some(timed.cpu),
        window: Some(timed.window),
    })
}

/// What [`iterate`] measured.
struct Timed {
    elapsed: Duration,
    cpu: Duration,
    window: (SystemTime, SystemTime),
}

/// All-reduce `buffers` `w.iterations` times with `op`; return the timing and the last
/// result. The checks are left to the caller: they are slow, and not all-reduce time.
fn iterate<T: Element>(
    comm: &Communicator,
    w: &Workload,
    op: Op,
    mut buffers: Buffers<T>,
    barrier: Option<&Barrier>,
    tick: &(dyn Fn(u32, Duration) + Sync),
) -> Result<(Timed, Vec<T>), Error> {
    let mut elapsed = Duration::ZERO;
    let mut first = None;
    if w.warmup {
        timed(barrier, || comm.allreduce(&mut buffers.data, op))?;
        buffers.reset(1);
    }
    for i in 0..w.iterations.max(1) {
        buffers.reset(i);
        let data = &mut buffers.data;
        let t = timed(barrier, || {
            if i == 0 {
                first = Some((cpu_time(), SystemTime::now()));
            }
            comm.allreduce(data, op)
        })?;
        elapsed += t;
        tick(i, t);
    }
    if let Some(b) = barrier {
        b.wait();
    }
    let (cpu_end, end) = (cpu_time(), SystemTime::now());
    let (cpu_start, start) = first.unwrap_or((cpu_end, end));
    let timed = Timed {
        elapsed,
        cpu: cpu_end.saturating_sub(cpu_start),
        window: (start, end),
    };
    Ok((timed, buffers.data))
}

fn timed(
    barrier: Option<&Barrier>,
    f: impl FnOnce() -> Result<(), Error>,
) -> Result<Duration, Error> {
    if let Some(b) = barrier {
        b.wait();
    }
    let start = Instant::now();
    f()?;
    Ok(start.elapsed())
}

/// CPU time (user + system) this process has used so far, from getrusage(2).
pub fn cpu_time() -> Duration {
    // SAFETY: an all-zero rusage is valid and getrusage writes into the live struct we pass.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_made_per_rank_and_type() {
        let w = Workload {
            elements: 1000,
            iterations: 1,
            dtype: Dtype::F32,
            op: Op::Sum,
            seed: 7,
            verify: true,
            warmup: false,
        };
        let Input::F32(a) = Input::new(&w, 0, 2) else {
            panic!("f32 workload, not f32 input")
        };
        let Input::F32(b) = Input::new(&w, 1, 2) else {
            panic!("f32 workload, not f32 input")
        };
        assert_eq!((a.data.len(), b.data.len()), (1000, 1000));
        assert_ne!(a.data, b.data);
        // One iteration needs no pristine copy; several restore the input each time.
        assert!(a.pristine.is_none());
        let mut c = Buffers::new(vec![1, 2, 3], 2, true);
        c.data[0] = 9;
        c.reset(0);
        assert_eq!(c.data, [9, 2, 3]);
        c.reset(1);
        assert_eq!(c.data, [1, 2, 3]);
        let w = Workload {
            dtype: Dtype::I32,
            ..w
        };
        assert!(matches!(Input::new(&w, 0, 2), Input::I32(v) if v.data.len() == 1000));
        let w = Workload {
            dtype: Dtype::F16,
            ..w
        };
        assert!(matches!(Input::new(&w, 0, 2), Input::F16(v) if v.data.len() == 1000));
        let w = Workload {
            dtype: Dtype::Bf16,
            ..w
        };
        assert!(matches!(Input::new(&w, 0, 2), Input::Bf16(v) if v.data.len() == 1000));
    }

    #[test]
    fn only_a_checked_or_narrow_input_is_restored_between_all_reduces() {
        let pristine = |w: Workload, world| match Input::new(&w, 0, world) {
            Input::F32(b) => b.pristine.is_some(),
            Input::I32(b) => b.pristine.is_some(),
            Input::F16(b) => b.pristine.is_some(),
            Input::Bf16(b) => b.pristine.is_some(),
        };
        let w = Workload {
            elements: 10,
            iterations: 3,
            dtype: Dtype::F32,
            op: Op::Sum,
            seed: 7,
            verify: false,
            warmup: false,
        };
        // Unchecked f32, as `switchml bench` runs: all-reduced in place, as Gloo's is.
        assert!(!pristine(w, 4));
        assert!(pristine(Workload { verify: true, ..w }, 4));
        assert!(pristine(
            Workload {
                dtype: Dtype::I32,
                ..w
            },
            4
        ));
        assert!(pristine(
            Workload {
                dtype: Dtype::F16,
                ..w
            },
            4
        ));
        // A warm-up is one more all-reduce of the same buffer.
        let once = Workload {
            iterations: 1,
            verify: true,
            ..w
        };
        assert!(!pristine(once, 4));
        assert!(pristine(
            Workload {
                warmup: true,
                ..once
            },
            4
        ));
        // Sums of sums that would leave f32's range start from the input again.
        assert!(pristine(
            Workload {
                iterations: 60,
                ..w
            },
            4
        ));
    }
}
