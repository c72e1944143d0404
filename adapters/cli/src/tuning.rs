//! The `switchml worker` flags that say where a worker joins ([`JoinArgs`]) and how its
//! lanes are set up ([`Tuning`]): the top layer of the worker library's settings.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use switchml_worker::{CommConfig, Settings};

/// Where a worker joins: flags, a TOML file, or the environment (RANK, WORLD_SIZE, ...).
#[derive(Args, Debug, Clone)]
pub struct JoinArgs {
    /// The switch, host:port (else SWITCHML_SWITCH or MASTER_ADDR, else the file).
    #[arg(long)]
    pub switch: Option<String>,
    /// The job id (else SWITCHML_JOB, else the file, else 0).
    #[arg(long)]
    pub job: Option<u16>,
    /// This worker's rank (else RANK, else the file).
    #[arg(long)]
    pub rank: Option<u16>,
    /// The number of ranks (else WORLD_SIZE, else the file).
    #[arg(long)]
    pub world: Option<u16>,
    /// A TOML file of settings, below flags and environment (else SWITCHML_CONFIG; keys as
    /// in `switchml_worker::Settings::from_file`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where rank 0 listens for the fallback ring's rendezvous, host:port (else
    /// SWITCHML_FALLBACK_ADDR, else the file; unset: no fallback, a switch failure is an
    /// error).
    #[arg(long)]
    pub fallback_addr: Option<String>,
}

/// How the workers' lanes are set up; every rank must use the same lanes, window and count.
///
/// A flag left out is not set: the value then comes from the environment, else the TOML
/// file, else the library's default (`switchml_worker::Settings`).
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct Tuning {
    /// I/O threads (lanes) per worker [env: SWITCHML_LANES; default: 2].
    #[arg(long)]
    pub lanes: Option<u16>,
    /// Slots per lane, i.e. packets in flight per lane [env: SWITCHML_WINDOW; default: 128].
    #[arg(long)]
    pub window: Option<u16>,
    /// Values per packet [env: SWITCHML_COUNT; default: 256, which fits a 1500-byte MTU;
    /// loopback and jumbo frames can take 1024].
    #[arg(long)]
    pub count: Option<u16>,
    /// First retransmission timeout, ms [env: SWITCHML_RTO_MS; default: 20].
    #[arg(long)]
    pub rto_ms: Option<u64>,
    /// Largest retransmission timeout, ms [env: SWITCHML_MAX_RTO_MS; default: the larger
    /// of 200 and 40 × the first].
    #[arg(long)]
    pub max_rto_ms: Option<u64>,
    /// Timeouts of one use before a worker probes and gives up [env: SWITCHML_RETRIES;
    /// default: 30].
    #[arg(long)]
    pub retries: Option<u16>,
    /// Seconds to wait for every rank to join [env: SWITCHML_JOIN_TIMEOUT_MS, in ms;
    /// default: 30].
    #[arg(long)]
    pub join_timeout: Option<u64>,
    /// Microseconds a lane lets datagrams gather after one wakes it (0: read at once); a
    /// few hundred cut a lane's CPU time on a shaped link. At most half the RTO
    /// [env: SWITCHML_COALESCE_US; default: 0].
    #[arg(long)]
    pub coalesce_us: Option<u64>,
}

impl Tuning {
    /// The flags given, as the top layer of settings.
    pub fn settings(&self) -> Settings {
        let mut s = Settings::default();
        s.lanes = self.lanes;
        s.window = self.window;
        s.count = self.count;
        s.rto = self.rto_ms.map(|ms| Duration::from_millis(ms.max(1)));
        s.max_rto = self.max_rto_ms.map(|ms| Duration::from_millis(ms.max(1)));
        s.retries = self.retries;
        s.join_timeout = self.join_timeout.map(|t| Duration::from_secs(t.max(1)));
        s.coalesce = self.coalesce_us.map(Duration::from_micros);
        s
    }

    /// Apply these flags over the environment (`SWITCHML_*`, and the file
    /// `SWITCHML_CONFIG` names) to `c`, which keeps its rank, world, switch and job.
    pub fn apply(&self, c: CommConfig) -> Result<CommConfig, String> {
        let layered = self
            .settings()
            .layered(None, |name| std::env::var(name).ok())
            .map_err(|e| e.to_string())?;
        let c = layered.tune(c);
        c.validate().map_err(|e| e.to_string())?;
        Ok(c)
    }
}
