//! `switchml-fpga-cosim`: run co-simulations of the FPGA aggregator against the reference
//! switch through the Verilator harness, and stop at the first mismatch.
//!
//! ```text
//! switchml-fpga-cosim --sim PATH [--work DIR] golden [--seed S]
//! switchml-fpga-cosim --sim PATH [--work DIR] random --seed S --packets N [--count 8|256]
//! switchml-fpga-cosim --sim PATH [--work DIR] perf
//! ```
//! `--sim`: the harness binary (built by `fpga/cosim/run`); `--work`: where scripts and
//! outputs go (default `target/fpga`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use switchml_fpga_cosim::{compare, golden, perf, random, Expected, RtlRun, Summary};

struct Harness {
    sim: PathBuf,
    work: PathBuf,
}

impl Harness {
    /// Play `script` into the RTL and compare what came out with `expected`.
    fn run(
        &self,
        name: &str,
        script: &str,
        expected: &Expected,
    ) -> Result<(Summary, RtlRun), String> {
        let script_path = self.work.join(format!("{name}.script"));
        let out_path = self.work.join(format!("{name}.out"));
        std::fs::write(&script_path, script)
            .map_err(|e| format!("{}: {e}", script_path.display()))?;
        let status = Command::new(&self.sim)
            .arg(&script_path)
            .arg(&out_path)
            .status()
            .map_err(|e| format!("{}: {e}", self.sim.display()))?;
        if !status.success() {
            return Err(format!("[{name}] the harness failed: {status}"));
        }
        let text = std::fs::read_to_string(&out_path).map_err(|e| e.to_string())?;
        let rtl = RtlRun::parse(&text)?;
        let summary = compare(expected, &rtl)
            .map_err(|m| format!("[{name}] MISMATCH (script {}):\n{m}", script_path.display()))?;
        Ok((summary, rtl))
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn number(args: &[String], name: &str, default: u64) -> Result<u64, String> {
    arg(args, name).map_or(Ok(default), |v| {
        v.parse().map_err(|e| format!("{name}: {e}"))
    })
}

fn golden(h: &Harness, seed: u64) -> Result<(), String> {
    let mut total = 0;
    for case in golden::scenario_cases(seed)?
        .into_iter()
        .chain([golden::wire_case(seed)?])
    {
        let name = format!("golden-{}", case.name.replace(['/', '.'], "_"));
        let (s, _) = h.run(&name, &case.script, &case.expected)?;
        total += s.packets;
    }
    println!("golden: switch.txt scenarios and wire.txt, {total} packets, no mismatch");
    Ok(())
}

fn random_run(h: &Harness, seed: u64, packets: usize, count: u64) -> Result<(), String> {
    let stall = seed.wrapping_mul(0x9E37_79B9).max(1);
    let (script, expected) = match count {
        8 => random::sequence::<8>(seed, packets, stall).finish(),
        256 => random::sequence::<256>(seed, packets, stall).finish(),
        other => return Err(format!("--count {other}: 8 or 256")),
    };
    let (s, _) = h.run(&format!("random-{seed}-k{count}"), &script, &expected)?;
    println!(
        "random: seed {seed}, max_count {count}: {} packets ({} to the host, {} answers \
         compared byte for byte, {} drops), no mismatch",
        s.packets, s.host, s.answers, s.drops
    );
    Ok(())
}

fn perf_run(h: &Harness) -> Result<(), String> {
    println!("count world packets cycles cycles/packet");
    for count in [0u16, 64, 256] {
        for world in [1u16, 4] {
            let uses = 16;
            let (script, expected) = perf::contributions::<256>(count, world, uses).finish();
            let (summary, rtl) = h.run(&format!("perf-k{count}-w{world}"), &script, &expected)?;
            if summary.drops > 0 {
                return Err(format!(
                    "timing k = {count}: {} packets dropped",
                    summary.drops
                ));
            }
            let packets = 16 * u64::from(world) * u64::from(uses);
            let cycles = rtl.marks[1] - rtl.marks[0];
            println!(
                "{count} {world} {packets} {cycles} {:.2}",
                cycles as f64 / packets as f64
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(sim) = arg(&args, "--sim") else {
        eprintln!("usage: switchml-fpga-cosim --sim PATH [--work DIR] golden|random|perf ...");
        return ExitCode::from(2);
    };
    let work = PathBuf::from(arg(&args, "--work").unwrap_or_else(|| "target/fpga".into()));
    if let Err(e) = std::fs::create_dir_all(&work) {
        eprintln!("{}: {e}", work.display());
        return ExitCode::from(2);
    }
    let h = Harness {
        sim: Path::new(&sim).to_path_buf(),
        work,
    };
    let result = if args.iter().any(|a| a == "golden") {
        number(&args, "--seed", 1).and_then(|seed| golden(&h, seed))
    } else if args.iter().any(|a| a == "random") {
        (|| {
            let seed = number(&args, "--seed", 1)?;
            let packets = number(&args, "--packets", 10_000)? as usize;
            random_run(&h, seed, packets, number(&args, "--count", 8)?)
        })()
    } else if args.iter().any(|a| a == "perf") {
        perf_run(&h)
    } else {
        Err("say golden, random or perf".into())
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
