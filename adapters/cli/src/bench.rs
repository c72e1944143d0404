//! `switchml bench`: all-reduce throughput on loopback for 2 and 4 workers and tensors of
//! 1 M to 64 M f32 elements, with the CPU time it costs, against PyTorch's Gloo backend
//! (`torch.distributed`, TCP on 127.0.0.1) measured in the same run on the same machine.
//!
//! Gloo runs as `PYTHON gloo_bench.py` (the script is built into this binary), `PYTHON`
//! being `--python`, else `SWITCHML_PYTHON`, else `/usr/bin/python3`: Debian's
//! `python3-torch` is importable from the system interpreter (`scripts/install-gloo`
//! installs it); elsewhere torch often lives in a virtual environment.

use std::path::PathBuf;
use std::process::Command;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};

use crate::demo::run_local;
use crate::local_switch::Setup;
use crate::report::si;
use crate::run::{Dtype, Workload};
use crate::tuning::Tuning;

const GLOO_SCRIPT: &str = include_str!("../gloo_bench.py");
const PLOT_SCRIPT: &str = include_str!("../bench_plot.py");
const PYTHON: &str = "/usr/bin/python3";

/// The Python to run Gloo with: `flag`, else `SWITCHML_PYTHON`, else [`PYTHON`].
pub fn python(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os("SWITCHML_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(PYTHON))
}

/// One measurement.
#[derive(Debug, Clone, Copy, Default)]
struct Point {
    seconds: f64,
    cpu_seconds: f64,
}

impl Point {
    fn eps(&self, elements: usize, iterations: u32) -> f64 {
        elements as f64 * f64::from(iterations) / self.seconds.max(1e-9)
    }

    /// CPU seconds per GB of one worker's tensor reduced.
    fn cpu_per_gb(&self, elements: usize, iterations: u32) -> f64 {
        self.cpu_seconds / (elements as f64 * 4.0 * f64::from(iterations) / 1e9)
    }
}

/// What to measure and how to report it.
pub struct Options {
    /// Worker counts.
    pub workers: Vec<u16>,
    /// Tensor sizes, in elements.
    pub sizes: Vec<usize>,
    /// All-reduces per measurement.
    pub iterations: u32,
    /// The Python to run Gloo with; `None`: no Gloo.
    pub gloo: Option<PathBuf>,
    /// The switch's shards.
    pub shards: usize,
    /// Draw elements/s against P into this PNG (matplotlib in the Python of `python`).
    pub plot: Option<PathBuf>,
    /// The Python that draws the plot.
    pub python: PathBuf,
    /// Print JSON instead of the table.
    pub json: bool,
}

/// Run the bench; return the exit code.
pub fn bench(o: &Options, tuning: &Tuning) -> i32 {
    let (workers, sizes, gloo, shards, json_out) =
        (&o.workers[..], &o.sizes[..], &o.gloo, o.shards, o.json);
    let iterations = o.iterations.max(1);
    let tuned = match crate::demo::local_config(1, tuning) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let progress = if json_out {
        ProgressBar::hidden()
    } else {
        ProgressBar::new((workers.len() * sizes.len()) as u64)
    };
    progress.set_style(
        ProgressStyle::with_template("{spinner} bench [{bar:30}] {pos}/{len} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    progress.enable_steady_tick(std::time::Duration::from_millis(100));
    let mut rows = Vec::new();
    let mut failed = false;
    for &p in workers {
        let mut ours = Vec::new();
        for &n in sizes {
            progress.set_message(format!("switchml P={p} {n} elements"));
            let w = Workload {
                elements: n,
                iterations,
                dtype: Dtype::F32,
                op: switchml_worker::Op::Sum,
                seed: 1,
                verify: false,
                warmup: true,
            };
            let hidden = ProgressBar::hidden();
            let setup = Setup {
                drop_rate: 0.0,
                shards,
                children: 0,
            };
            match run_local(p, &w, &tuned, setup, &hidden) {
                Ok(r) if r.problem.is_none() => ours.push(Some(Ours {
                    point: Point {
                        seconds: r.elapsed.as_secs_f64(),
                        cpu_seconds: r.cpu.as_secs_f64(),
                    },
                    retransmissions: r.retransmissions,
                    sent: r.sent,
                    switch_share: r.switch_share,
                })),
                Ok(r) => {
                    failed = true;
                    progress.println(format!("P={p} n={n}: {}", r.problem.unwrap_or_default()));
                    ours.push(None);
                }
                Err(e) => {
                    failed = true;
                    progress.println(format!("P={p} n={n}: {e}"));
                    ours.push(None);
                }
            }
            progress.inc(1);
        }
        let theirs = if let Some(python) = gloo {
            progress.set_message(format!("gloo P={p}"));
            run_gloo(python, p, sizes, iterations).unwrap_or_else(|e| {
                progress.println(format!("gloo P={p}: {e}"));
                vec![None; sizes.len()]
            })
        } else {
            vec![None; sizes.len()]
        };
        for ((&n, o), g) in sizes.iter().zip(ours).zip(theirs) {
            rows.push((p, n, o, g));
        }
    }
    progress.finish_and_clear();
    print_table(&rows, iterations, json_out);
    if let Some(png) = &o.plot {
        if let Err(e) = plot(&o.python, &rows_json(&rows, iterations), png) {
            eprintln!("plot: {e}");
            failed = true;
        }
    }
    i32::from(failed)
}

/// A switchml-rs measurement.
#[derive(Debug, Clone, Copy)]
struct Ours {
    point: Point,
    retransmissions: u64,
    /// Contributions sent, resends included.
    sent: u64,
    /// The switch's share of the CPU (the rest is the ranks').
    switch_share: f64,
}

type Row = (u16, usize, Option<Ours>, Option<Point>);

/// The rows as the `--json` document: `{"bench": [...]}`.
fn rows_json(rows: &[Row], iterations: u32) -> Value {
    let v: Vec<Value> = rows
        .iter()
        .map(|(p, n, o, g)| {
            let side = |pt: &Point| {
                json!({
                    "seconds": pt.seconds / f64::from(iterations),
                    "elements_per_sec": pt.eps(*n, iterations),
                    "gbytes_per_sec": pt.eps(*n, iterations) * 4.0 / 1e9,
                    "cpu_seconds_per_gb": pt.cpu_per_gb(*n, iterations),
                })
            };
            json!({
                "workers": p,
                "elements": n,
                "iterations": iterations,
                "switchml": o.map(|o| {
                    let mut s = side(&o.point);
                    let cpu = o.point.cpu_per_gb(*n, iterations);
                    s["retransmissions"] = json!(o.retransmissions);
                    s["packets_sent"] = json!(o.sent);
                    s["switch_cpu_seconds_per_gb"] = json!(cpu * o.switch_share);
                    s["ranks_cpu_seconds_per_gb"] = json!(cpu * (1.0 - o.switch_share));
                    s
                }),
                "gloo": g.as_ref().map(side),
                "speedup_vs_gloo": match (o, g) {
                    (Some(a), Some(b)) => Some(b.seconds / a.point.seconds),
                    _ => None,
                },
            })
        })
        .collect();
    json!({ "bench": v })
}

fn print_table(rows: &[Row], iterations: u32, json_out: bool) {
    if json_out {
        println!("{}", rows_json(rows, iterations));
        return;
    }
    println!("loopback all-reduce of f32 tensors, {iterations} iterations each; elements/s as every worker sees them; CPU = all processes, per GB of one worker's tensor (switchml: switch + ranks)");
    println!(
        "{:>2} {:>10} | {:>14} {:>9} {:>13} {:>6} | {:>14} {:>9} | {:>7} {:>9}",
        "P",
        "elements",
        "switchml el/s",
        "GB/s",
        "CPU-s/GB",
        "resend",
        "gloo el/s",
        "CPU-s/GB",
        "speedup",
        "CPU ratio"
    );
    for (p, n, o, g) in rows {
        let (oe, og, oc, or) = match o {
            Some(o) => {
                let (pt, cpu) = (o.point, o.point.cpu_per_gb(*n, iterations));
                (
                    si(pt.eps(*n, iterations)),
                    format!("{:.3}", pt.eps(*n, iterations) * 4.0 / 1e9),
                    format!(
                        "{:.2}+{:.2}",
                        cpu * o.switch_share,
                        cpu * (1.0 - o.switch_share)
                    ),
                    o.retransmissions.to_string(),
                )
            }
            None => ("failed".into(), "-".into(), "-".into(), "-".into()),
        };
        let (ge, gc) = match g {
            Some(pt) => (
                si(pt.eps(*n, iterations)),
                format!("{:.2}", pt.cpu_per_gb(*n, iterations)),
            ),
            None => ("-".into(), "-".into()),
        };
        let (speedup, cpu_ratio) = match (o, g) {
            (Some(a), Some(b)) => (
                format!("{:.2}×", b.seconds / a.point.seconds),
                format!("{:.2}×", a.point.cpu_seconds / b.cpu_seconds.max(1e-9)),
            ),
            _ => ("-".into(), "-".into()),
        };
        println!(
            "{p:>2} {n:>10} | {oe:>14} {og:>9} {oc:>13} {or:>6} | {ge:>14} {gc:>9} | {speedup:>7} {cpu_ratio:>9}"
        );
    }
    println!("speedup = gloo time / switchml time; CPU ratio = switchml CPU / gloo CPU");
}

/// Draw `results` (the `--json` document) into `png` with `python` and matplotlib.
fn plot(python: &std::path::Path, results: &Value, png: &std::path::Path) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("switchml-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (script, data) = (dir.join("bench_plot.py"), dir.join("bench.json"));
    std::fs::write(&script, PLOT_SCRIPT).map_err(|e| e.to_string())?;
    std::fs::write(&data, results.to_string()).map_err(|e| e.to_string())?;
    let out = Command::new(python)
        .arg(&script)
        .arg(&data)
        .arg(png)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("").to_string();
        return Err(format!(
            "{last} (is matplotlib installed? apt-get install python3-matplotlib)"
        ));
    }
    Ok(())
}

/// Run the Gloo script for `p` workers; one point per size.
fn run_gloo(
    python: &std::path::Path,
    p: u16,
    sizes: &[usize],
    iterations: u32,
) -> Result<Vec<Option<Point>>, String> {
    let dir = std::env::temp_dir().join(format!("switchml-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let script = dir.join("gloo_bench.py");
    std::fs::write(&script, GLOO_SCRIPT).map_err(|e| e.to_string())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let list: Vec<String> = sizes.iter().map(usize::to_string).collect();
    let out = Command::new(python)
        .arg(&script)
        .args([
            "--workers",
            &p.to_string(),
            "--sizes",
            &list.join(","),
            "--iterations",
            &iterations.to_string(),
            "--port",
            &port.to_string(),
        ])
        .output()
        .map_err(|e| {
            let python = python.display();
            format!("cannot run {python}: {e} (run scripts/install-gloo, or give --python)")
        })?;
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("");
        return Err(format!(
            "{} gloo_bench.py failed: {last} (is torch installed? scripts/install-gloo)",
            python.display()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let parsed: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Ok(sizes
        .iter()
        .map(|n| {
            let v = parsed
                .iter()
                .find(|v| v["elements"].as_u64() == Some(*n as u64))?;
            Some(Point {
                seconds: v["seconds"].as_f64()?,
                cpu_seconds: v["cpu_seconds"].as_f64()?,
            })
        })
        .collect())
}
