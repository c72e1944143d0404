//! Where a [`CommConfig`] comes from: up to three sources of settings, each of which may
//! leave any setting out, layered in one fixed order.
//!
//! 1. **arguments** (what a program or the `switchml` flags set: [`Settings`] built in code);
//! 2. **the environment**: `RANK`, `WORLD_SIZE`, `SWITCHML_SWITCH` (else `MASTER_ADDR` with
//!    `SWITCHML_PORT`), `SWITCHML_JOB`, `SWITCHML_JOB_KEY`, and a `SWITCHML_<NAME>` twin of
//!    every tuning key of the file (`SWITCHML_LANES`, `SWITCHML_RTO_MS`,
//!    `SWITCHML_FALLBACK_ADDR`, ...);
//! 3. **a TOML file**, named by the arguments or else by `SWITCHML_CONFIG`: the keys of
//!    [`Settings`] (`rank`, `world_size`, `switch`, `job`, `key`, `lanes`, ...);
//! 4. **the defaults** of [`CommConfig::new`].
//!
//! A setting takes the value of the first source that has it. So a launcher's environment
//! overrides a shared file, and a flag overrides both; a flag nobody gave changes nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use switchml_core::wire::SWITCH_PORT;

use crate::config::{resolve, CommConfig, Dialect};
use crate::error::Error;

/// One source's settings; `None` leaves a setting to the sources below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// This worker's rank (`RANK`, `rank`).
    pub rank: Option<u16>,
    /// The number of ranks (`WORLD_SIZE`, `world_size`).
    pub world_size: Option<u16>,
    /// The switch, `host:port` (`SWITCHML_SWITCH` or `MASTER_ADDR`, `switch`).
    pub switch: Option<String>,
    /// The job id (`SWITCHML_JOB`, `job`).
    pub job: Option<u16>,
    /// The job's key (`SWITCHML_JOB_KEY` and `key`, in hex).
    pub key: Option<u64>,
    /// I/O threads per worker (`SWITCHML_LANES`, `lanes`).
    pub lanes: Option<u16>,
    /// Slots per lane (`SWITCHML_WINDOW`, `window`).
    pub window: Option<u16>,
    /// Values per packet (`SWITCHML_COUNT`, `count`).
    pub count: Option<u16>,
    /// First retransmission timeout (`SWITCHML_RTO_MS`, `rto_ms`).
    pub rto: Option<Duration>,
    /// Largest retransmission timeout (`SWITCHML_MAX_RTO_MS`, `max_rto_ms`).
    pub max_rto: Option<Duration>,
    /// Timeouts of one use before giving up (`SWITCHML_RETRIES`, `retries`).
    pub retries: Option<u16>,
    /// How long to wait for a busy peer (`SWITCHML_TIMEOUT`, `timeout`, in seconds).
    pub timeout: Option<Duration>,
    /// How long to wait for every rank (`SWITCHML_JOIN_TIMEOUT_MS`, `join_timeout_ms`).
    pub join_timeout: Option<Duration>,
    /// Receive coalescing (`SWITCHML_COALESCE_US`, `coalesce_us`).
    pub coalesce: Option<Duration>,
    /// Rank 0's fallback rendezvous, `host:port` (`SWITCHML_FALLBACK_ADDR`,
    /// `fallback_addr`); unset, no fallback.
    pub fallback: Option<String>,
    /// The fallback's wait for a peer (`SWITCHML_FALLBACK_TIMEOUT_MS`, `fallback_timeout_ms`).
    pub fallback_timeout: Option<Duration>,
    /// The protocol, `switchml` or `p4app` (`SWITCHML_DIALECT`, `dialect`).
    pub dialect: Option<Dialect>,
    /// Which setting the switch address came from, for error messages.
    switch_source: Option<&'static str>,
}

/// The TOML file as written; every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    rank: Option<u16>,
    world_size: Option<u16>,
    switch: Option<String>,
    job: Option<u16>,
    lanes: Option<u16>,
    window: Option<u16>,
    count: Option<u16>,
    rto_ms: Option<u64>,
    max_rto_ms: Option<u64>,
    retries: Option<u16>,
    timeout: Option<u64>,
    join_timeout_ms: Option<u64>,
    coalesce_us: Option<u64>,
    key: Option<String>,
    fallback_addr: Option<String>,
    fallback_timeout_ms: Option<u64>,
    dialect: Option<String>,
}

impl Settings {
    /// Read the environment's settings over `var` (tests pass a map; see the module doc for
    /// the names). `SWITCHML_CONFIG` is not read here: [`Settings::layered`] does that.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Settings, Error> {
        let number = |name: &str| -> Result<Option<u16>, Error> {
            var(name)
                .map(|v| {
                    v.trim().parse().map_err(|_| {
                        Error::Config(format!("{name}={v:?} is not a number in 0..=65535"))
                    })
                })
                .transpose()
        };
        let long = |name: &str| -> Result<Option<u64>, Error> {
            var(name)
                .map(|v| {
                    v.trim()
                        .parse()
                        .map_err(|_| Error::Config(format!("{name}={v:?} is not a number")))
                })
                .transpose()
        };
        let (switch, switch_source) = match (var("SWITCHML_SWITCH"), var("MASTER_ADDR")) {
            (Some(s), _) => (Some(s), Some("SWITCHML_SWITCH")),
            (None, Some(host)) => {
                let port = number("SWITCHML_PORT")?.unwrap_or(SWITCH_PORT);
                (Some(format!("{host}:{port}")), Some("MASTER_ADDR"))
            }
            (None, None) => (None, None),
        };
        let key = var("SWITCHML_JOB_KEY")
            .map(|k| {
                crate::daemon::parse_key(&k)
                    .map_err(|e| Error::Config(format!("SWITCHML_JOB_KEY: {e}")))
            })
            .transpose()?;
        Ok(Settings {
            rank: number("RANK")?,
            world_size: number("WORLD_SIZE")?,
            switch,
            job: number("SWITCHML_JOB")?,
            key,
            lanes: number("SWITCHML_LANES")?,
            window: number("SWITCHML_WINDOW")?,
            count: number("SWITCHML_COUNT")?,
            rto: long("SWITCHML_RTO_MS")?.map(Duration::from_millis),
            max_rto: long("SWITCHML_MAX_RTO_MS")?.map(Duration::from_millis),
            retries: number("SWITCHML_RETRIES")?,
            timeout: long("SWITCHML_TIMEOUT")?.map(Duration::from_secs),
            join_timeout: long("SWITCHML_JOIN_TIMEOUT_MS")?.map(Duration::from_millis),
            coalesce: long("SWITCHML_COALESCE_US")?.map(Duration::from_micros),
            fallback: var("SWITCHML_FALLBACK_ADDR"),
            fallback_timeout: long("SWITCHML_FALLBACK_TIMEOUT_MS")?.map(Duration::from_millis),
            dialect: var("SWITCHML_DIALECT").map(|d| d.parse()).transpose()?,
            switch_source,
        })
    }

    /// Read a TOML file's settings: `rank`, `world_size`, `switch` ("host:port"), `job`,
    /// `key` (hex), `lanes`, `window`, `count`, `rto_ms`, `max_rto_ms`, `retries`,
    /// `timeout` (seconds), `join_timeout_ms`, `coalesce_us`, `fallback_addr` ("host:port"),
    /// `fallback_timeout_ms`, `dialect` ("switchml" or "p4app"); any other key is an error.
    pub fn from_file(path: &Path) -> Result<Settings, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Config(format!("cannot read {}: {e}", path.display())))?;
        let file: ConfigFile =
            toml::from_str(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
        let key = file
            .key
            .as_deref()
            .map(|k| {
                crate::daemon::parse_key(k)
                    .map_err(|e| Error::Config(format!("{}: key {k:?}: {e}", path.display())))
            })
            .transpose()?;
        Ok(Settings {
            rank: file.rank,
            world_size: file.world_size,
            switch_source: file.switch.as_ref().map(|_| "switch (config file)"),
            switch: file.switch,
            job: file.job,
            key,
            lanes: file.lanes,
            window: file.window,
            count: file.count,
            rto: file.rto_ms.map(Duration::from_millis),
            max_rto: file.max_rto_ms.map(Duration::from_millis),
            retries: file.retries,
            timeout: file.timeout.map(Duration::from_secs),
            join_timeout: file.join_timeout_ms.map(Duration::from_millis),
            coalesce: file.coalesce_us.map(Duration::from_micros),
            fallback: file.fallback_addr,
            fallback_timeout: file.fallback_timeout_ms.map(Duration::from_millis),
            dialect: file.dialect.map(|d| d.parse()).transpose()?,
        })
    }

    /// Layer the sources: `self` (the arguments) over the environment read through `var`,
    /// over the TOML file `file` (else the one `SWITCHML_CONFIG` names, if any).
    pub fn layered(
        self,
        file: Option<&Path>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, Error> {
        let path = file
            .map(Path::to_path_buf)
            .or_else(|| var("SWITCHML_CONFIG").map(PathBuf::from));
        let env = Settings::from_vars(&var)?;
        let file = match path {
            Some(p) => Settings::from_file(&p)?,
            None => Settings::default(),
        };
        Ok(self.or(env).or(file))
    }

    /// Return these settings, with each one left out taken from `lower`.
    pub fn or(self, lower: Settings) -> Settings {
        let (switch, switch_source) = match self.switch {
            Some(s) => (Some(s), self.switch_source.or(Some("switch"))),
            None => (lower.switch, lower.switch_source),
        };
        Settings {
            rank: self.rank.or(lower.rank),
            world_size: self.world_size.or(lower.world_size),
            switch,
            job: self.job.or(lower.job),
            key: self.key.or(lower.key),
            lanes: self.lanes.or(lower.lanes),
            window: self.window.or(lower.window),
            count: self.count.or(lower.count),
            rto: self.rto.or(lower.rto),
            max_rto: self.max_rto.or(lower.max_rto),
            retries: self.retries.or(lower.retries),
            timeout: self.timeout.or(lower.timeout),
            join_timeout: self.join_timeout.or(lower.join_timeout),
            coalesce: self.coalesce.or(lower.coalesce),
            fallback: self.fallback.or(lower.fallback),
            fallback_timeout: self.fallback_timeout.or(lower.fallback_timeout),
            dialect: self.dialect.or(lower.dialect),
            switch_source,
        }
    }

    /// Return a full configuration: `rank`, `world_size` and `switch` must be set; the
    /// rest falls back to the defaults of [`CommConfig::new`] (job 0, key 0).
    pub fn config(&self) -> Result<CommConfig, Error> {
        let missing = |what: &str| Error::Config(format!("{what} is not set"));
        let rank = self.rank.ok_or_else(|| missing("RANK"))?;
        let world = self.world_size.ok_or_else(|| missing("WORLD_SIZE"))?;
        let switch = match &self.switch {
            Some(s) => resolve(self.switch_source.unwrap_or("switch"), s)?,
            None => {
                return Err(Error::Config(
                    "no switch address: set SWITCHML_SWITCH=host:port or MASTER_ADDR".into(),
                ))
            }
        };
        let mut config = self.tune(CommConfig::new(rank, world, switch, self.job.unwrap_or(0)));
        if let Some(at) = &self.fallback {
            config.fallback = Some(resolve(
                "fallback address (SWITCHML_FALLBACK_ADDR, fallback_addr)",
                at,
            )?);
        }
        config.validate()?;
        Ok(config)
    }

    /// Return `c` with the tuning settings (lanes, window, count, timeouts, retries,
    /// coalescing) and the key applied where set; rank, world, switch and job stay `c`'s.
    ///
    /// A `max_rto` that no source sets is the larger of `c`'s and 40 × `rto`, so that a
    /// longer first timeout still has room to back off.
    pub fn tune(&self, c: CommConfig) -> CommConfig {
        let rto = self.rto.unwrap_or(c.rto);
        CommConfig {
            lanes: self.lanes.unwrap_or(c.lanes),
            window: self.window.unwrap_or(c.window),
            count: self.count.unwrap_or(c.count),
            rto,
            max_rto: self.max_rto.unwrap_or(c.max_rto.max(rto * 40)),
            retries: self.retries.unwrap_or(c.retries),
            timeout: self.timeout.unwrap_or(c.timeout),
            join_timeout: self.join_timeout.unwrap_or(c.join_timeout),
            coalesce: self.coalesce.unwrap_or(c.coalesce),
            key: self.key.unwrap_or(c.key),
            fallback_timeout: self.fallback_timeout.unwrap_or(c.fallback_timeout),
            dialect: self.dialect.unwrap_or(c.dialect),
            ..c
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DEFAULT_COUNT, DEFAULT_LANES, DEFAULT_WINDOW, IP_UDP_HEADERS};
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    /// A TOML file in a fresh directory; removed with the directory by the caller.
    fn file(name: &str, text: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("switchml-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("worker.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn arguments_beat_the_environment_which_beats_the_file_which_beats_the_defaults() {
        let (dir, path) = file(
            "layers",
            "rank = 3\nworld_size = 4\nswitch = \"127.0.0.1:7000\"\njob = 2\n\
             lanes = 3\nwindow = 16\ncount = 100\nrto_ms = 7\nretries = 9\nkey = \"aa\"\n",
        );
        let path_text = path.display().to_string();
        let env = [
            ("SWITCHML_CONFIG", path_text.as_str()),
            ("RANK", "1"),
            ("SWITCHML_WINDOW", "8"),
            ("SWITCHML_COUNT", "64"),
            ("SWITCHML_JOB_KEY", "bb"),
        ];
        let args = Settings {
            count: Some(32),
            ..Settings::default()
        };
        let c = args.layered(None, vars(&env)).unwrap().config().unwrap();
        // count: the argument; window, rank, key: the environment; lanes, job, rto,
        // retries, world, switch: the file; join timeout and coalescing: the defaults.
        assert_eq!(c.count, 32);
        assert_eq!((c.window, c.rank, c.key), (8, 1, 0xBB));
        assert_eq!((c.lanes, c.job, c.retries, c.world), (3, 2, 9, 4));
        assert_eq!(c.rto, Duration::from_millis(7));
        assert_eq!(c.switch, "127.0.0.1:7000".parse().unwrap());
        let defaults = CommConfig::new(0, 1, c.switch, 0);
        assert_eq!(c.join_timeout, defaults.join_timeout);
        assert_eq!(c.coalesce, defaults.coalesce);
        // An argument naming a file replaces SWITCHML_CONFIG's.
        let (dir2, other) = file("layers-other", "lanes = 5\n");
        let c = Settings::default()
            .layered(Some(&other), vars(&env))
            .unwrap();
        assert_eq!((c.lanes, c.window, c.world_size), (Some(5), Some(8), None));
        // Nothing set anywhere: the library's defaults.
        let c = CommConfig::from_vars(vars(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("SWITCHML_SWITCH", "127.0.0.1:1"),
        ]))
        .unwrap();
        assert_eq!(
            (c.lanes, c.window, c.count),
            (DEFAULT_LANES, DEFAULT_WINDOW, DEFAULT_COUNT)
        );
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&dir2).unwrap();
    }

    #[test]
    fn every_tuning_key_has_an_environment_twin() {
        let s = Settings::from_vars(vars(&[
            ("SWITCHML_LANES", "1"),
            ("SWITCHML_WINDOW", "2"),
            ("SWITCHML_COUNT", "3"),
            ("SWITCHML_RTO_MS", "4"),
            ("SWITCHML_MAX_RTO_MS", "5"),
            ("SWITCHML_RETRIES", "6"),
            ("SWITCHML_JOIN_TIMEOUT_MS", "7"),
            ("SWITCHML_COALESCE_US", "8"),
            ("SWITCHML_TIMEOUT", "300"),
        ]))
        .unwrap();
        let ms = Duration::from_millis;
        assert_eq!((s.lanes, s.window, s.count), (Some(1), Some(2), Some(3)));
        assert_eq!((s.rto, s.max_rto), (Some(ms(4)), Some(ms(5))));
        assert_eq!((s.retries, s.join_timeout), (Some(6), Some(ms(7))));
        assert_eq!(s.coalesce, Some(Duration::from_micros(8)));
        assert_eq!(
            s.timeout,
            Some(Duration::from_secs(300)),
            "seconds, as torch's"
        );
        let e = Settings::from_vars(vars(&[("SWITCHML_RTO_MS", "soon")])).unwrap_err();
        assert!(e.to_string().contains("SWITCHML_RTO_MS=\"soon\""), "{e}");
    }

    #[test]
    fn the_fallback_address_comes_from_any_source_and_is_off_by_default() {
        let base = [
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("SWITCHML_SWITCH", "127.0.0.1:1"),
        ];
        let c = CommConfig::from_vars(vars(&base)).unwrap();
        assert_eq!(c.fallback, None, "off unless an address is given");
        let (dir, path) = file(
            "fallback",
            "fallback_addr = \"127.0.0.1:7001\"\nfallback_timeout_ms = 900\n",
        );
        let path_text = path.display().to_string();
        let mut env = base.to_vec();
        env.push(("SWITCHML_CONFIG", path_text.as_str()));
        let c = CommConfig::from_vars(vars(&env)).unwrap();
        assert_eq!(c.fallback, Some("127.0.0.1:7001".parse().unwrap()));
        assert_eq!(c.fallback_timeout, Duration::from_millis(900));
        env.push(("SWITCHML_FALLBACK_ADDR", "127.0.0.1:7002"));
        let c = CommConfig::from_vars(vars(&env)).unwrap();
        assert_eq!(c.fallback, Some("127.0.0.1:7002".parse().unwrap()));
        std::fs::remove_dir_all(&dir).unwrap();
        let bad = [base.as_slice(), &[("SWITCHML_FALLBACK_ADDR", "no-port")]].concat();
        let e = CommConfig::from_vars(vars(&bad)).unwrap_err();
        assert!(e.to_string().contains("SWITCHML_FALLBACK_ADDR"), "{e}");
    }

    #[test]
    fn a_longer_first_timeout_brings_a_longer_largest_one_unless_that_is_set() {
        let base = CommConfig::new(0, 1, "127.0.0.1:1".parse().unwrap(), 0);
        let rto = |ms| Settings {
            rto: Some(Duration::from_millis(ms)),
            ..Settings::default()
        };
        assert_eq!(rto(2).tune(base.clone()).max_rto, base.max_rto);
        assert_eq!(
            rto(30).tune(base.clone()).max_rto,
            Duration::from_millis(1200)
        );
        let both = Settings {
            max_rto: Some(Duration::from_millis(90)),
            ..rto(30)
        };
        assert_eq!(both.tune(base).max_rto, Duration::from_millis(90));
    }

    #[test]
    fn a_default_contribution_fits_a_1500_byte_mtu() {
        let c = CommConfig::new(0, 2, "127.0.0.1:1".parse().unwrap(), 0);
        let datagram = c.lane(0, 1).max_datagram();
        assert_eq!(datagram, switchml_core::wire::data::HEADER_LEN + 4 * 256);
        assert!(datagram + IP_UDP_HEADERS <= 1500, "{datagram} bytes");
        // And the switch's default job holds the default layout.
        assert_eq!(
            c.slots(),
            u32::from(crate::daemon::DEFAULT_JOB_SLOTS),
            "a default worker fits a default job"
        );
    }

    #[test]
    fn the_dialect_is_ours_unless_set_to_p4app_which_takes_64_or_256_values() {
        let base = [
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("SWITCHML_SWITCH", "127.0.0.1:50099"),
        ];
        let config = |extra: &[(&str, &str)]| {
            let mut all = base.to_vec();
            all.extend_from_slice(extra);
            Settings::from_vars(vars(&all)).and_then(|s| s.config())
        };
        assert_eq!(config(&[]).unwrap().dialect, Dialect::Switchml);
        let p4app = config(&[("SWITCHML_DIALECT", "p4app"), ("SWITCHML_COUNT", "64")]);
        assert_eq!(p4app.unwrap().dialect, Dialect::P4app);
        assert!(config(&[("SWITCHML_DIALECT", "p4app"), ("SWITCHML_COUNT", "100")]).is_err());
        assert!(config(&[("SWITCHML_DIALECT", "tofino")]).is_err());
    }
}
