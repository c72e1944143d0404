//! `switchml`: run the switchml-rs UDP adapter from a shell.
//!
//! - `demo`: switch and workers in one process on loopback, verified, with throughput;
//! - `switch` / `worker`: each side as its own process, on one host or several;
//! - `job`: add, remove and list the jobs of a running switch through its admin socket;
//! - `doctor`: ask a switch whether it is there, how fast it answers, and about a job;
//! - `bench`: loopback throughput against PyTorch's Gloo all-reduce, in the same run.
//!
//! Every report prints for a person, or as one JSON object with `--json`. Log lines go to
//! stderr, warnings and errors only unless `RUST_LOG` asks for more ([`logger`]).

mod bench;
mod demo;
mod doctor;
mod doctor_p4app;
mod inputs;
mod local_switch;
mod logger;
mod output;
mod p4app_cmd;
mod report;
mod run;
mod signal;
mod switch_cmd;
mod tuning;
mod worker_cmd;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use switchml_switchd::{JobSpec, SwitchConfig, SwitchPipeline};

use crate::run::{Dtype, Workload};
use crate::tuning::{JoinArgs, Tuning};
use switchml_worker::Settings;

#[derive(Parser)]
#[command(
    name = "switchml",
    version,
    about = "In-network aggregation over UDP (SwitchML in Rust)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a switch and N workers on this machine and all-reduce, verified.
    #[command(after_long_help = settings_help())]
    Demo {
        /// Workers (ranks).
        #[arg(long, default_value_t = 4)]
        workers: u16,
        /// Elements per tensor (suffixes k, M, G allowed: 16M).
        #[arg(long, default_value = "16M", value_parser = parse_count)]
        elements: usize,
        #[command(flatten)]
        work: WorkArgs,
        #[command(flatten)]
        tuning: Tuning,
        /// Lose each datagram at the switch with this probability (each way).
        #[arg(long, default_value_t = 0.0)]
        drop_rate: f64,
        /// Switch shards, a thread each [default: one per core; 1 with --children].
        #[arg(long)]
        threads: Option<usize>,
        /// Two levels (docs/protocol.md §7): this many child switches, each serving a
        /// contiguous range of the workers, under one parent switch; 0: one switch.
        #[arg(long, default_value_t = 0)]
        children: u16,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Run the software switch daemon until SIGINT/SIGTERM; print its counters then.
    Switch {
        /// Address to listen on (port 0: any free port, printed at start).
        #[arg(long, default_value = "0.0.0.0:48864")]
        bind: std::net::SocketAddr,
        /// A job to serve, `ID:WORLD[:SLOTS[:KEY]]` (slots default to 256; KEY: the job's
        /// credential in hex, else SWITCHML_JOB_KEY, which its workers must set too; a job
        /// with neither is refused unless KEY is `none` or --allow-keyless is given);
        /// repeat for several.
        #[arg(long = "job", required_unless_present_any = ["admin", "parent_jobs", "iface"])]
        jobs: Vec<JobSpec>,
        /// A parent's job of two-level aggregation (docs/protocol.md §7),
        /// `ID:CHILDREN[:SLOTS[:KEY]]`: its ranks are the child switches (each a
        /// `switchml switch --child-of`), member i being the child with `member=i`.
        #[arg(long = "parent-job")]
        parent_jobs: Vec<JobSpec>,
        /// Make a --job a child's (docs/protocol.md §7): its ranks' sums go up to a parent
        /// switch and its Results come down from there. The value:
        /// `job=ID,parent=HOST:PORT,parent-job=ID,member=I,members=C,rank-lo=LO,world=P`
        /// with an optional `,parent-key=HEX`: the --job's WORLD ranks are global ranks LO..
        /// of the whole job's P, and this child is member I of the parent's job (C
        /// children). With --threads N, the parent needs N too: shard i of the child goes
        /// up to shard i of the parent, at the parent's port plus i.
        #[arg(long = "child-of")]
        child_jobs: Vec<switchml_switchd::ChildSpec>,
        /// Release a job's run after this many seconds without a packet from its ranks.
        #[arg(long, default_value_t = 3600)]
        idle_timeout: u64,
        /// End a run when one of its ranks has sent nothing for this many milliseconds,
        /// telling the others which (Abort RankSilent, protocol.md §4.3); workers keep
        /// alive every 250 ms. 0: never.
        #[arg(long, default_value_t = 1500)]
        dead_after: u64,
        /// Take `switchml job` requests (add, remove, list, share, stats; with --dialect
        /// p4app: list and stats) on this Unix socket, created with mode 0600: whoever may
        /// open it administers the switch.
        #[arg(long)]
        admin: Option<std::path::PathBuf>,
        /// Serve jobs that have no key (none in the spec, no SWITCHML_JOB_KEY), here and
        /// through --admin, instead of refusing them: anyone who reaches the switch may then
        /// join them. One job's `:none` key says the same for that job only.
        #[arg(long)]
        allow_keyless: bool,
        /// Answer Status (`switchml doctor`): `on`, or `off` where the switch faces
        /// untrusted senders (Status asks no key; its answers are rate-limited per source
        /// address either way).
        #[arg(long, default_value = "on", value_parser = ["on", "off"])]
        status: String,
        /// Serve every counter (the ones `--json` prints; with --dialect p4app, the
        /// dialect switch's) for Prometheus at `http://ADDR/metrics`, e.g. `--metrics
        /// 127.0.0.1:9464`. Off by default.
        #[arg(long, value_name = "ADDR")]
        metrics: Option<std::net::SocketAddr>,
        /// Sample each shard's send backlog (the bytes its Results still hold in the queues
        /// toward the workers, SIOCOUTQ) before every batch and, while it is above BYTES,
        /// mark what the switch counts CONGESTED (docs/protocol.md §6.3), so that the
        /// Results carry the mark to every rank (counted as `congested_batches` and
        /// `results_marked`). Off by default.
        #[arg(long, value_name = "BYTES")]
        mark_backlog: Option<usize>,
        /// Pool slots for jobs added through --admin, beyond the --job ones.
        #[arg(long, default_value_t = 1024)]
        spare_slots: usize,
        /// The switch that aggregates: `reference` (the core's) or `p4-model` (the Rust twin
        /// of the P4 programs: at most 256 values a packet, 64 ranks a job).
        #[arg(long, default_value_t = SwitchPipeline::Reference)]
        pipeline: SwitchPipeline,
        /// Shards, a thread each with its own switch, on consecutive ports from --bind's;
        /// lane l of every worker goes to shard l mod N by itself (docs/protocol.md §1.1)
        /// [default: one per core; 1 with --parent-job or --child-of, which need one].
        #[arg(long)]
        threads: Option<usize>,
        /// Lose each datagram with this probability (each way), like SwitchML's drop simulator.
        #[arg(long, default_value_t = 0.0)]
        drop_rate: f64,
        /// Seed of the loss injector.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print the counters every this many seconds (0: only at the end).
        #[arg(long, default_value_t = 0)]
        report_every: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// The protocol served: `switchml` (ours, docs/protocol.md) or `p4app` (the original
        /// SwitchML's client, on raw Ethernet frames of --iface; docs/p4app.md).
        #[arg(long, value_enum, default_value_t = p4app_cmd::Dialect::Switchml)]
        dialect: p4app_cmd::Dialect,
        /// How datagrams move: `socket` (UDP sockets, GSO/GRO) or `xdp` (AF_XDP on --iface,
        /// shard i on its receive queue i, root or CAP_NET_ADMIN + CAP_BPF; falls back to the
        /// sockets, saying why, where XDP is unavailable). With --dialect p4app: `socket`
        /// reads every frame from an AF_PACKET socket; `xdp` takes the dialect's UDP frames
        /// (ports 0xBEE0-0xBEEF) through one AF_XDP socket per receive queue, batched, and
        /// ARP and the rest through the AF_PACKET socket (falls back to it alone, saying
        /// why).
        #[arg(long, default_value = "socket", value_parser = ["socket", "xdp"])]
        io: String,
        /// --dialect p4app: the interface whose frames the switch takes (root or CAP_NET_RAW);
        /// --io xdp: the interface the workers' datagrams arrive on.
        #[arg(long, required_if_eq_any([("dialect", "p4app"), ("io", "xdp")]))]
        iface: Option<String>,
        /// --dialect p4app: the switch's IPv4 address, which it answers ARP for; not an
        /// address of this host's own stack.
        #[arg(long, required_if_eq("dialect", "p4app"))]
        ip: Option<std::net::Ipv4Addr>,
        /// --dialect p4app: where the gRPC control plane (Sync, Session) listens.
        #[arg(long, default_value = "0.0.0.0:50099")]
        control: std::net::SocketAddr,
    },
    /// Run one worker (rank) of a job: all-reduce generated tensors and verify them.
    ///
    /// The multi-host command: start one per rank, on any hosts that reach the switch.
    #[command(after_long_help = worker_help())]
    Worker {
        #[command(flatten)]
        join: JoinArgs,
        /// Elements per tensor.
        #[arg(long, default_value = "1M", value_parser = parse_count)]
        elements: usize,
        #[command(flatten)]
        work: WorkArgs,
        #[command(flatten)]
        tuning: Tuning,
        /// Write the last result to FILE: raw little-endian values, or a NumPy `.npy` file
        /// when the name ends in `.npy` (bf16 as its `<u2` bit patterns).
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add, remove or list the jobs of a running switch (`switchml switch --admin PATH`), or
    /// read its counters: `add ID:WORLD[:SLOTS[:KEY]]` (KEY in hex; a job without one is
    /// refused unless KEY is `none` or the switch runs with --allow-keyless), `remove ID` (a
    /// run's ranks are told the job was removed, Abort `JobRemoved`), `share ID PERCENT` (an
    /// idle job's range becomes PERCENT of the slot pool, at the lowest free range: its
    /// bound on data in flight, so its part of links shared with other jobs; its workers'
    /// lanes × window must fit), `list`, `stats` (every counter, every shard's added up, as
    /// `--metrics` serves them).
    Job {
        /// The switch's admin socket.
        #[arg(long)]
        admin: std::path::PathBuf,
        /// The request: `add SPEC`, `remove ID`, `share ID PERCENT`, `list` or `stats`.
        #[arg(required = true, num_args = 1..)]
        request: Vec<String>,
    },
    /// Probe a switch: reachability, round-trip time, the job and its ranks. The switch
    /// answers a Status only to the job's key: set SWITCHML_JOB_KEY as for its workers.
    Doctor {
        /// The switch's address, host:port (--dialect p4app: its gRPC control plane's,
        /// checked for a connection).
        #[arg(long, required_unless_present = "admin")]
        switch: Option<String>,
        /// The protocol the switch serves: `switchml` (asked with Status messages) or
        /// `p4app` (asked through its --admin socket: the dialect has no Status).
        #[arg(long, value_enum, default_value_t = p4app_cmd::Dialect::Switchml)]
        dialect: p4app_cmd::Dialect,
        /// --dialect p4app: the switch's admin socket (`switchml switch --dialect p4app
        /// --admin PATH`), whose `stats` the doctor reads.
        #[arg(long, required_if_eq("dialect", "p4app"))]
        admin: Option<std::path::PathBuf>,
        /// The job id to ask about.
        #[arg(long, default_value_t = 0)]
        job: u16,
        /// Probes to send.
        #[arg(long, default_value_t = 5)]
        probes: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Read the counters from a BMv2 switch's control plane with this command (its
        /// StatusReply carries zeros), e.g. 'simple_switch_CLI --thrift-port 9090'.
        #[arg(long, value_name = "COMMAND")]
        bmv2_cli: Option<String>,
    },
    /// Loopback throughput for 2 and 4 workers, 1M to 64M elements, against Gloo.
    #[command(after_long_help = settings_help())]
    Bench {
        /// Worker counts, comma-separated.
        #[arg(long, default_value = "2,4", value_delimiter = ',')]
        workers: Vec<u16>,
        /// Tensor sizes, comma-separated (suffixes allowed).
        #[arg(long, default_value = "1M,4M,16M,64M", value_delimiter = ',', value_parser = parse_count)]
        sizes: Vec<usize>,
        /// All-reduces timed per measurement, after one untimed warm-up (as the Gloo side
        /// has).
        #[arg(long, default_value_t = 3)]
        iterations: u32,
        /// Skip the Gloo comparison.
        #[arg(long)]
        no_gloo: bool,
        /// Switch shards, a thread each [default: one per core].
        #[arg(long)]
        threads: Option<usize>,
        /// The Python that imports torch, for Gloo, and matplotlib, for --plot [else
        /// SWITCHML_PYTHON, else /usr/bin/python3].
        #[arg(long)]
        python: Option<PathBuf>,
        /// Draw elements/s against the number of workers, both systems, into this PNG.
        #[arg(long, value_name = "PNG")]
        plot: Option<PathBuf>,
        #[command(flatten)]
        tuning: Tuning,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Which source of a setting wins, for `--help`: the names come from the library's one
/// list of settings (`switchml_worker::Settings::NAMES`).
fn settings_help() -> String {
    let variables: Vec<String> = Settings::NAMES
        .iter()
        .map(|&n| match n {
            "switch" => "SWITCHML_SWITCH or MASTER_ADDR with SWITCHML_PORT".to_string(),
            _ => Settings::variable(n),
        })
        .collect();
    let help = format!(
        "Settings: arguments > environment > TOML file > defaults. A flag left out sets \
         nothing; then the environment ({}), then the TOML file that --config or \
         SWITCHML_CONFIG names (keys {}), then the library's defaults \
         (switchml_worker::CommConfig). Every rank of a job must end up with the same lanes, \
         window and count. With a fallback address, rank 0 listens there and the ranks fall \
         back to a TCP ring all-reduce among themselves if the switch cannot serve the job \
         (the report says so).",
        variables.join(", "),
        Settings::NAMES.join(", "),
    );
    textwrap(&help, 90)
}

/// Break `text` into lines of at most `width` characters, at spaces.
fn textwrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        if line > 0 && line + 1 + word.len() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.len();
    }
    out
}

/// `switchml worker --help`'s closing text: where settings come from, and the data.
fn worker_help() -> String {
    format!("{}\n\n{}", settings_help(), inputs::DATA_HELP)
}

/// What to all-reduce.
#[derive(Args, Debug, Clone, Copy)]
struct WorkArgs {
    /// All-reduces of the tensor.
    #[arg(long, default_value_t = 1)]
    iterations: u32,
    /// Element type: f32, f16 and bf16 are quantized per block, i32 is summed exactly.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    dtype: Dtype,
    /// Average instead of sum (float types only).
    #[arg(long)]
    average: bool,
    /// Input seed (every rank must use the same).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Skip the check against the exact reference.
    #[arg(long)]
    no_verify: bool,
}

impl WorkArgs {
    fn workload(&self, elements: usize) -> Workload {
        Workload {
            elements,
            iterations: self.iterations.max(1),
            dtype: self.dtype,
            op: demo::op(self.average),
            seed: self.seed,
            verify: !self.no_verify,
            warmup: false,
        }
    }
}

/// Parse `16M`, `1k`, `1000`.
fn parse_count(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (digits, mult) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1 << 10),
        Some('m' | 'M') => (&s[..s.len() - 1], 1 << 20),
        Some('g' | 'G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits
        .parse::<usize>()
        .map(|n| n * mult)
        .map_err(|_| format!("{s:?} is not a count like 1000, 64k or 16M"))
}

fn main() {
    logger::init();
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Demo {
            workers,
            elements,
            work,
            tuning,
            drop_rate,
            threads,
            children,
            json,
        } => {
            let shards = threads.unwrap_or_else(|| match children {
                0 => switchml_switchd::default_shards(),
                _ => 1,
            });
            let w = work.workload(elements);
            let setup = local_switch::Setup {
                drop_rate,
                shards,
                children,
            };
            demo::demo(workers, &w, &tuning, setup, json)
        }
        Command::Switch {
            bind,
            mut jobs,
            parent_jobs,
            child_jobs,
            drop_rate,
            seed,
            idle_timeout,
            dead_after,
            admin,
            spare_slots,
            pipeline,
            threads,
            report_every,
            json,
            allow_keyless,
            status,
            metrics,
            io,
            mark_backlog,
            dialect,
            iface,
            ip,
            control,
        } => 'arm: {
            if let (p4app_cmd::Dialect::P4app, Some(iface), Some(ip)) = (dialect, &iface, ip) {
                let serving = p4app_cmd::Serving {
                    control,
                    report_every,
                    json,
                    admin,
                    metrics,
                    xdp: io == "xdp",
                };
                break 'arm p4app_cmd::switch(iface, ip, serving);
            }
            let xdp = io == "xdp";
            if (iface.is_some() && !xdp) || ip.is_some() {
                eprintln!("error: --iface is for --dialect p4app or --io xdp, --ip for p4app");
                break 'arm 2;
            }
            let tree = !parent_jobs.is_empty() || !child_jobs.is_empty();
            let parents = parent_jobs.iter().map(|j| j.id).collect();
            jobs.extend(parent_jobs);
            let config = SwitchConfig {
                shards: threads.unwrap_or_else(|| match tree {
                    true => 1,
                    false => switchml_switchd::default_shards(),
                }),
                drop_rate,
                seed,
                idle_timeout: std::time::Duration::from_secs(idle_timeout),
                dead_after: (dead_after > 0).then(|| std::time::Duration::from_millis(dead_after)),
                spare_slots: admin.as_ref().map_or(0, |_| spare_slots),
                admin,
                pipeline,
                parent_jobs: parents,
                child_jobs,
                allow_keyless,
                answer_status: status == "on",
                metrics,
                xdp_iface: iface.filter(|_| xdp),
                mark_backlog,
                ..SwitchConfig::new(bind, jobs)
            };
            switch_cmd::switch(config, report_every, json)
        }
        Command::Job { admin, request } => {
            let request = request.join(" ");
            match switchml_switchd::admin_request(
                &admin,
                &request,
                std::time::Duration::from_secs(5),
            ) {
                Ok(reply) => {
                    let reply = reply.strip_prefix("ok\n").unwrap_or(&reply);
                    println!("{}", reply.strip_prefix("ok ").unwrap_or(reply));
                    0
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    1
                }
            }
        }
        Command::Worker {
            join,
            elements,
            work,
            tuning,
            output,
            json,
        } => worker_cmd::worker(
            &join,
            &work.workload(elements),
            &tuning,
            output.as_deref(),
            json,
        ),
        Command::Doctor {
            switch,
            dialect,
            admin,
            job,
            probes,
            json,
            bmv2_cli,
        } => match (dialect, admin, switch) {
            (p4app_cmd::Dialect::P4app, Some(admin), switch) => {
                doctor_p4app::doctor(&admin, switch.as_deref(), json)
            }
            (p4app_cmd::Dialect::Switchml, _, Some(switch)) => {
                match switchml_switchd::key_from_env() {
                    Ok(key) => doctor::doctor(&switch, job, key, probes, json, bmv2_cli.as_deref()),
                    Err(e) => {
                        eprintln!("switchml doctor: {e}");
                        2
                    }
                }
            }
            _ => {
                eprintln!("switchml doctor: --switch is required (--admin is for --dialect p4app)");
                2
            }
        },
        Command::Bench {
            workers,
            sizes,
            iterations,
            no_gloo,
            threads,
            python,
            plot,
            tuning,
            json,
        } => {
            let python = bench::python(python);
            let options = bench::Options {
                workers,
                sizes,
                iterations,
                gloo: (!no_gloo).then(|| python.clone()),
                shards: threads.unwrap_or_else(switchml_switchd::default_shards),
                plot,
                python,
                json,
            };
            bench::bench(&options, &tuning)
        }
    };
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchml_worker::{CommConfig, Settings};

    #[test]
    fn counts_take_suffixes() {
        assert_eq!(parse_count("16M"), Ok(16 << 20));
        assert_eq!(parse_count("64k"), Ok(64 << 10));
        assert_eq!(parse_count("1000"), Ok(1000));
        assert!(parse_count("x").is_err());
    }

    /// The defaults `--help` quotes are the library's: the CLI has none of its own.
    #[test]
    fn help_quotes_the_library_defaults_and_flags_left_out_set_nothing() {
        use clap::CommandFactory;
        use switchml_worker::config::{DEFAULT_COUNT, DEFAULT_LANES, DEFAULT_WINDOW};
        let c = CommConfig::new(0, 1, "127.0.0.1:1".parse().unwrap(), 0);
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("worker")
            .expect("worker")
            .render_long_help()
            .to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for quoted in [
            format!("SWITCHML_LANES; default: {DEFAULT_LANES}]"),
            format!("SWITCHML_WINDOW; default: {DEFAULT_WINDOW}]"),
            format!("SWITCHML_COUNT; default: {DEFAULT_COUNT},"),
            format!("SWITCHML_RTO_MS; default: {}]", c.rto.as_millis()),
            format!("default: the larger of {} and 40", c.max_rto.as_millis()),
            format!("SWITCHML_RETRIES; default: {}]", c.retries),
            format!(
                "SWITCHML_JOIN_TIMEOUT_MS; default: {}]",
                c.join_timeout.as_millis()
            ),
            format!(
                "SWITCHML_FALLBACK_TIMEOUT_MS; default: {}]",
                c.fallback_timeout.as_millis()
            ),
            format!("SWITCHML_COALESCE_US; default: {}]", c.coalesce.as_micros()),
        ] {
            assert!(help.contains(&quoted), "--help lacks {quoted:?}: {help}");
        }
        assert!(help.contains("arguments > environment"), "{help}");
        assert!(
            help.contains("u = mix(seed ^ (r << 48) ^ mix(i))"),
            "{help}"
        );
        let cli = Cli::try_parse_from(["switchml", "worker"]).unwrap();
        let Command::Worker { tuning, .. } = cli.command else {
            panic!("not the worker command")
        };
        assert_eq!(tuning.settings(), Settings::default());
    }

    #[test]
    fn the_cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
