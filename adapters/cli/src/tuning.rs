//! The `switchml worker` flags that say where a worker joins ([`JoinArgs`]) and how its
//! lanes are set up ([`Tuning`]): the top layer of the worker library's settings.

use std::path::PathBuf;

use clap::Args;
use switchml_worker::{CommConfig, Settings};

/// Where a worker's settings come from besides flags and the environment.
#[derive(Args, Debug, Clone)]
pub struct JoinArgs {
    /// A TOML file of settings, below flags and environment (else SWITCHML_CONFIG; keys as
    /// the flags, with underscores: `switchml_worker::Settings::NAMES`).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// The worker library's settings as flags: every knob is a field of
/// `switchml_worker::Settings`, flattened here, so the CLI lists none of its own. A flag
/// left out is not set: the value then comes from the environment, else the TOML file,
/// else the library's default.
#[derive(Args, Debug, Clone, Default)]
pub struct Tuning {
    #[command(flatten)]
    pub settings: Settings,
    /// Seconds to wait for every rank to join: the older spelling of --join-timeout-ms.
    #[arg(long = "join-timeout", value_name = "SECONDS", hide = true)]
    pub join_timeout_secs: Option<u64>,
}

impl Tuning {
    /// The flags given, as the top layer of settings.
    pub fn settings(&self) -> Settings {
        let mut s = self.settings.clone();
        if s.join_timeout_ms.is_none() {
            s.join_timeout_ms = self.join_timeout_secs.map(|t| t.max(1) * 1000);
        }
        s
    }

    /// Apply these flags over the environment (`SWITCHML_*`, and the file
    /// `SWITCHML_CONFIG` names) to `c`, a local run's configuration, which keeps its rank,
    /// world, switch and job: the flags that would set those are refused.
    pub fn apply(&self, c: CommConfig) -> Result<CommConfig, String> {
        let s = self.settings();
        let own = [
            ("--rank", s.rank.is_some()),
            ("--world", s.world_size.is_some()),
            ("--switch", s.switch.is_some()),
            ("--job", s.job.is_some()),
            ("--fallback-addr", s.fallback_addr.is_some()),
        ];
        let given: Vec<&str> = own
            .iter()
            .filter(|(_, set)| *set)
            .map(|(f, _)| *f)
            .collect();
        if !given.is_empty() {
            return Err(format!(
                "{}: a local run has its own ranks, switch and job (these flags are \
                 `switchml worker`'s)",
                given.join(", ")
            ));
        }
        let layered = s
            .layered(None, |name| std::env::var(name).ok())
            .map_err(|e| e.to_string())?;
        let c = layered.tune(c);
        c.validate().map_err(|e| e.to_string())?;
        Ok(c)
    }
}
