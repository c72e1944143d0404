//! Where a [`CommConfig`] comes from: up to three sources of settings, each of which may
//! leave any setting out, layered in one fixed order.
//!
//! 1. **arguments** (what a program, the `switchml` flags or Python's keyword arguments set:
//!    [`Settings`] built in code);
//! 2. **the environment**: `RANK`, `WORLD_SIZE`, `SWITCHML_SWITCH` (else `MASTER_ADDR` with
//!    `SWITCHML_PORT`), `SWITCHML_JOB_KEY`, and `SWITCHML_<NAME>` for every other setting
//!    (`SWITCHML_JOB`, `SWITCHML_LANES`, `SWITCHML_RTO_MS`, `SWITCHML_FALLBACK_ADDR`, ...);
//! 3. **a TOML file**, named by the arguments or else by `SWITCHML_CONFIG`: the names of
//!    [`Settings`]' fields (`rank`, `world_size`, `switch`, `job`, `key`, `lanes`, ...);
//! 4. **the defaults** of [`CommConfig::new`].
//!
//! A setting takes the value of the first source that has it. So a launcher's environment
//! overrides a shared file, and a flag overrides both; a flag nobody gave changes nothing.
//!
//! Every knob is listed once, as a field of [`Settings`] (the `settings!` list below): its
//! name is the file's key and Python's keyword, its environment variable follows from it
//! ([`Settings::variable`]), and with the `clap` feature the struct is the `switchml`
//! command's flags (`#[command(flatten)]`). The defaults are [`CommConfig::new`]'s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::{self, Deserializer, IntoDeserializer};
use serde::Deserialize;
use switchml_core::wire::SWITCH_PORT;
use switchml_core::worker::{max_rto_for, CongestionControl, NonFinitePolicy};
use switchml_udp::clock::{to_core, to_std};

use crate::config::{resolve, CommConfig, Dialect, IoPath, DEFAULT_JOB};
use crate::error::Error;

/// Define [`Settings`] from one list of fields: each becomes an `Option` field, and the
/// list also gives [`Settings::NAMES`] and [`Settings::or`].
macro_rules! settings {
    ($($(#[$attr:meta])* $name:ident: $ty:ty,)*) => {
        /// One source's settings; `None` leaves a setting to the sources below it. Every
        /// knob of a communicator, once: the field's name is its key in the TOML file and
        /// its keyword in Python, [`Settings::variable`] its environment variable, and
        /// `--name` (with dashes) its `switchml` flag (feature `clap`).
        #[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
        #[cfg_attr(feature = "clap", derive(clap::Args))]
        #[serde(deny_unknown_fields)]
        #[non_exhaustive]
        pub struct Settings {
            $($(#[$attr])* pub $name: Option<$ty>,)*
            /// Which setting the switch address came from, for error messages.
            #[serde(skip)]
            #[cfg_attr(feature = "clap", arg(skip))]
            switch_source: Option<&'static str>,
        }

        impl Settings {
            /// The settings' names, in order: the file's keys and Python's keywords.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

            /// Return every setting that is set, by name, in [`Settings::NAMES`]' order:
            /// numbers as numbers, the rest as the text a source would give (the key
            /// too: leave it out where it would be shown).
            pub fn values(&self) -> Vec<(&'static str, SettingValue)> {
                let mut out = Vec::new();
                $(if let Some(v) = &self.$name {
                    out.push((stringify!($name), v.setting_value()));
                })*
                out
            }

            /// Return these settings, with each one left out taken from `lower`.
            pub fn or(self, lower: Settings) -> Settings {
                let switch_source = match self.switch {
                    Some(_) => self.switch_source.or(Some("switch")),
                    None => lower.switch_source,
                };
                Settings {
                    $($name: self.$name.or(lower.$name),)*
                    switch_source,
                }
            }
        }
    };
}

settings! {
    /// This worker's rank, 0..world_size [env: RANK].
    #[cfg_attr(feature = "clap", arg(long))]
    rank: u16,
    /// The number of ranks [env: WORLD_SIZE].
    #[cfg_attr(feature = "clap", arg(long = "world", visible_alias = "world-size"))]
    world_size: u16,
    /// The switch, host:port [env: SWITCHML_SWITCH, else MASTER_ADDR with SWITCHML_PORT].
    #[cfg_attr(feature = "clap", arg(long))]
    switch: String,
    /// The job id [env: SWITCHML_JOB; default: 1, the job every example registers].
    #[cfg_attr(feature = "clap", arg(long))]
    job: u16,
    /// The job's key, 1 to 16 hex digits [env: SWITCHML_JOB_KEY; default: 0, no key]. No
    /// flag: a command line is visible to every user of the host.
    #[serde(default, deserialize_with = "key_text")]
    #[cfg_attr(feature = "clap", arg(skip))]
    key: u64,
    /// I/O threads (lanes) per worker [env: SWITCHML_LANES; default: 2].
    #[cfg_attr(feature = "clap", arg(long))]
    lanes: u16,
    /// Slots per lane, i.e. packets in flight per lane [env: SWITCHML_WINDOW; default: 128].
    #[cfg_attr(feature = "clap", arg(long))]
    window: u16,
    /// Values per packet [env: SWITCHML_COUNT; default: 0, from the path MTU to the switch:
    /// the largest power of two up to 1024 that fits, 256 on a 1500-byte Ethernet, 1024 on
    /// loopback or jumbo frames; the dialect's default is 64].
    #[cfg_attr(feature = "clap", arg(long))]
    count: u16,
    /// First retransmission timeout, ms [env: SWITCHML_RTO_MS; default: 20].
    #[cfg_attr(feature = "clap", arg(long))]
    rto_ms: u64,
    /// Largest retransmission timeout, ms [env: SWITCHML_MAX_RTO_MS; default: the larger
    /// of 200 and 40 × the first].
    #[cfg_attr(feature = "clap", arg(long))]
    max_rto_ms: u64,
    /// Timeouts of one use before a worker probes and gives up [env: SWITCHML_RETRIES;
    /// default: 30].
    #[cfg_attr(feature = "clap", arg(long))]
    retries: u16,
    /// How long a rank waits for a busy peer (one the switch still hears) before it gives
    /// up, in seconds, like torch's collective timeout [env: SWITCHML_TIMEOUT; default:
    /// 1800]. A dead peer is named by the switch within about 2 s whatever this says.
    #[cfg_attr(feature = "clap", arg(long))]
    timeout: u64,
    /// How long to wait for every rank to join, ms [env: SWITCHML_JOIN_TIMEOUT_MS;
    /// default: 30000].
    #[cfg_attr(feature = "clap", arg(long))]
    join_timeout_ms: u64,
    /// Microseconds a lane lets datagrams gather after one wakes it (0: read at once); a
    /// few hundred cut a lane's CPU time on a shaped link. At most half the RTO
    /// [env: SWITCHML_COALESCE_US; default: 0].
    #[cfg_attr(feature = "clap", arg(long))]
    coalesce_us: u64,
    /// Where rank 0 listens for the fallback ring's rendezvous, host:port
    /// [env: SWITCHML_FALLBACK_ADDR; default: none, no fallback: a switch failure is an
    /// error].
    #[cfg_attr(feature = "clap", arg(long))]
    fallback_addr: String,
    /// How long the fallback waits for a peer at any step, ms
    /// [env: SWITCHML_FALLBACK_TIMEOUT_MS; default: 120000].
    #[cfg_attr(feature = "clap", arg(long))]
    fallback_timeout_ms: u64,
    /// The protocol, switchml or p4app (the original SwitchML's) [env: SWITCHML_DIALECT;
    /// default: switchml].
    #[serde(default, deserialize_with = "dialect_text")]
    #[cfg_attr(feature = "clap", arg(long))]
    dialect: Dialect,
    /// A float tensor holding a NaN or ±∞: propagate (every rank gets non-finite values
    /// over the chunks that held them, like Gloo; protocol.md §5.4) or error (refused,
    /// nothing sent) [env: SWITCHML_NON_FINITE; default: propagate].
    #[serde(default, deserialize_with = "non_finite_text")]
    #[cfg_attr(feature = "clap", arg(long))]
    non_finite: NonFinitePolicy,
    /// How datagrams move: socket, or xdp:IF for AF_XDP on interface IF (root, or
    /// CAP_NET_ADMIN and CAP_BPF; falls back to the sockets, saying why)
    /// [env: SWITCHML_IO; default: socket].
    #[serde(default, deserialize_with = "io_text")]
    #[cfg_attr(feature = "clap", arg(long))]
    io: IoPath,
    /// Whether each lane adapts its window of slots in flight to congestion: on or off
    /// (protocol.md §6.3) [env: SWITCHML_CONGESTION; default: off].
    #[serde(default, deserialize_with = "congestion_text")]
    #[cfg_attr(feature = "clap", arg(long))]
    congestion: CongestionControl,
}

/// A setting's value, for a reader (Python's `Communicator.config()`, JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingValue {
    /// A number.
    Number(u64),
    /// Text: an address, a name.
    Text(String),
}

/// A setting's type, as a [`SettingValue`].
trait ToSettingValue {
    fn setting_value(&self) -> SettingValue;
}

impl ToSettingValue for u16 {
    fn setting_value(&self) -> SettingValue {
        SettingValue::Number(u64::from(*self))
    }
}

impl ToSettingValue for u64 {
    fn setting_value(&self) -> SettingValue {
        SettingValue::Number(*self)
    }
}

impl ToSettingValue for String {
    fn setting_value(&self) -> SettingValue {
        SettingValue::Text(self.clone())
    }
}

impl ToSettingValue for Dialect {
    fn setting_value(&self) -> SettingValue {
        SettingValue::Text(self.name().into())
    }
}

impl ToSettingValue for IoPath {
    fn setting_value(&self) -> SettingValue {
        SettingValue::Text(self.to_string())
    }
}

impl ToSettingValue for NonFinitePolicy {
    fn setting_value(&self) -> SettingValue {
        SettingValue::Text(self.name().into())
    }
}

impl ToSettingValue for CongestionControl {
    /// `on` or `off`, as the setting reads them (parameters other than the defaults have
    /// no text form: the core's `Config` carries them).
    fn setting_value(&self) -> SettingValue {
        SettingValue::Text(
            match self {
                CongestionControl::Off => "off",
                CongestionControl::On(_) => "on",
            }
            .into(),
        )
    }
}

impl Settings {
    /// Return the settings that make `c` (every one set): the inverse of
    /// [`Settings::config`], durations in the settings' units (a `fallback_addr` only if
    /// `c` has a fallback).
    pub fn of(c: &CommConfig) -> Settings {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Settings {
            rank: Some(c.rank),
            world_size: Some(c.world),
            switch: Some(c.switch.to_string()),
            job: Some(c.job),
            key: Some(c.key),
            lanes: Some(c.lanes),
            window: Some(c.window),
            count: Some(c.count),
            rto_ms: Some(ms(c.rto)),
            max_rto_ms: Some(ms(c.max_rto)),
            retries: Some(c.retries),
            timeout: Some(c.timeout.as_secs()),
            join_timeout_ms: Some(ms(c.join_timeout)),
            coalesce_us: Some(u64::try_from(c.coalesce.as_micros()).unwrap_or(u64::MAX)),
            fallback_addr: c.fallback.map(|a| a.to_string()),
            fallback_timeout_ms: Some(ms(c.fallback_timeout)),
            dialect: Some(c.dialect),
            non_finite: Some(c.non_finite),
            io: Some(c.io.clone()),
            congestion: Some(c.congestion),
            switch_source: None,
        }
    }

    /// Return the environment variable of setting `name` ([`Settings::NAMES`]):
    /// `SWITCHML_<NAME>`, but for a launcher's `RANK` and `WORLD_SIZE` and the job key's
    /// `SWITCHML_JOB_KEY`. (The switch also comes from `MASTER_ADDR`, see the module doc.)
    pub fn variable(name: &str) -> String {
        match name {
            "rank" => "RANK".into(),
            "world_size" => "WORLD_SIZE".into(),
            "key" => "SWITCHML_JOB_KEY".into(),
            _ => format!("SWITCHML_{}", name.to_ascii_uppercase()),
        }
    }

    /// Read the environment's settings over `var` (tests pass a map; see the module doc for
    /// the names). `SWITCHML_CONFIG` is not read here: [`Settings::layered`] does that.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Settings, Error> {
        let mut settings = Settings::default();
        for &name in Settings::NAMES {
            let variable = Settings::variable(name);
            let Some(text) = var(&variable) else {
                continue;
            };
            settings = settings.or(Settings::parse_one(name, &text, &variable)?);
        }
        settings.switch_source = settings.switch.as_ref().map(|_| "SWITCHML_SWITCH");
        if let (None, Some(host)) = (&settings.switch, var("MASTER_ADDR")) {
            let port = match var("SWITCHML_PORT") {
                Some(p) => p.trim().parse().map_err(|_| {
                    Error::Config(format!("SWITCHML_PORT={p:?} is not a number in 0..=65535"))
                })?,
                None => SWITCH_PORT,
            };
            settings.switch = Some(format!("{host}:{port}"));
            settings.switch_source = Some("MASTER_ADDR");
        }
        Ok(settings)
    }

    /// Read settings given by name, each as text read the way its environment variable is
    /// (Python's keyword arguments: `("lanes", "4")`, `("key", "5ec2e7")`); a name not in
    /// [`Settings::NAMES`] is an error naming it.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Settings, Error> {
        let mut settings = Settings::default();
        for (name, text) in pairs {
            if !Settings::NAMES.contains(&name) {
                return Err(Error::Config(format!(
                    "unknown setting {name:?}: the settings are {}",
                    Settings::NAMES.join(", ")
                )));
            }
            settings = settings.or(Settings::parse_one(name, text, name)?);
        }
        Ok(settings)
    }

    /// Read setting `name` from `text`; `source` names where it came from in errors.
    fn parse_one(name: &str, text: &str, source: &str) -> Result<Settings, Error> {
        Settings::deserialize(de::value::MapDeserializer::<_, de::value::Error>::new(
            std::iter::once((name, Text(text))),
        ))
        .map_err(|e| Error::Config(format!("{source}={text:?}: {e}")))
    }

    /// Read a TOML file's settings: the keys are [`Settings::NAMES`] (`key` in hex,
    /// `switch` and `fallback_addr` as "host:port", `dialect` "switchml" or "p4app"); any
    /// other key is an error.
    pub fn from_file(path: &Path) -> Result<Settings, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Config(format!("cannot read {}: {e}", path.display())))?;
        let mut file: Settings =
            toml::from_str(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
        file.switch_source = file.switch.as_ref().map(|_| "switch (config file)");
        Ok(file)
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

    /// Return a full configuration: `rank`, `world_size` and `switch` must be set; the
    /// rest falls back to the defaults of [`CommConfig::new`] and job [`DEFAULT_JOB`] (key 0).
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
        let mut config = self.tune(CommConfig::new(
            rank,
            world,
            switch,
            self.job.unwrap_or(DEFAULT_JOB),
        ));
        if let Some(at) = &self.fallback_addr {
            config.fallback = Some(resolve(
                "fallback address (SWITCHML_FALLBACK_ADDR, fallback_addr)",
                at,
            )?);
        }
        config.validate()?;
        Ok(config)
    }

    /// Return `c` with the tuning settings (lanes, window, count, timeouts, retries, the wait
    /// for a busy peer,
    /// coalescing), the key, the dialect and the non-finite policy applied where set; rank, world, switch, job and
    /// the fallback address stay `c`'s.
    ///
    /// A `max_rto_ms` that no source sets is the larger of `c`'s and 40 × `rto_ms`, so
    /// that a longer first timeout still has room to back off (the core's rule,
    /// [`switchml_core::worker::max_rto_for`]).
    pub fn tune(&self, c: CommConfig) -> CommConfig {
        let ms = Duration::from_millis;
        let rto = self.rto_ms.map_or(c.rto, ms);
        CommConfig {
            lanes: self.lanes.unwrap_or(c.lanes),
            window: self.window.unwrap_or(c.window),
            count: self.count.unwrap_or(c.count),
            rto,
            max_rto: self
                .max_rto_ms
                .map_or_else(|| to_std(max_rto_for(to_core(rto), to_core(c.max_rto))), ms),
            retries: self.retries.unwrap_or(c.retries),
            timeout: self.timeout.map_or(c.timeout, Duration::from_secs),
            join_timeout: self.join_timeout_ms.map_or(c.join_timeout, ms),
            coalesce: self.coalesce_us.map_or(c.coalesce, Duration::from_micros),
            key: self.key.unwrap_or(c.key),
            fallback_timeout: self.fallback_timeout_ms.map_or(c.fallback_timeout, ms),
            dialect: self.dialect.unwrap_or(c.dialect),
            non_finite: self.non_finite.unwrap_or(c.non_finite),
            io: self.io.clone().unwrap_or(c.io),
            congestion: self.congestion.unwrap_or(c.congestion),
            ..c
        }
    }
}

/// A key's text (1 to 16 hex digits, an optional `0x`), in the file or the environment.
fn key_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let text = String::deserialize(d)?;
    switchml_core::auth::parse_key(&text)
        .map(Some)
        .map_err(|e| de::Error::custom(format!("key {text:?}: {e}")))
}

/// A dialect's name, in the file or the environment.
fn dialect_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Dialect>, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map(Some).map_err(de::Error::custom)
}

/// A non-finite policy's name (`propagate`, `error`), in the file or the environment.
fn non_finite_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NonFinitePolicy>, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map(Some).map_err(de::Error::custom)
}

/// An I/O path's name (`socket`, `xdp:IF`), in the file or the environment.
fn io_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IoPath>, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map(Some).map_err(de::Error::custom)
}

/// A congestion control's name (`on`, `off`), in the file or the environment.
fn congestion_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CongestionControl>, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map(Some).map_err(de::Error::custom)
}

/// One environment variable's text, read as the type of its setting.
struct Text<'a>(&'a str);

impl<'de> IntoDeserializer<'de, de::value::Error> for Text<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for Text<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        v.visit_str(self.0)
    }

    fn deserialize_option<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        v.visit_some(self)
    }

    fn deserialize_u16<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        let n = self
            .0
            .trim()
            .parse()
            .map_err(|_| <Self::Error as de::Error>::custom("not a number in 0..=65535"))?;
        v.visit_u16(n)
    }

    fn deserialize_u64<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        let n = self
            .0
            .trim()
            .parse()
            .map_err(|_| <Self::Error as de::Error>::custom("not a number"))?;
        v.visit_u64(n)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u32 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

impl CommConfig {
    /// Read the environment a launcher sets, and the TOML file `SWITCHML_CONFIG` names if
    /// any, over the defaults: see [`Settings`] for the names and the
    /// order (the environment wins over the file). `RANK`, `WORLD_SIZE` and the switch's
    /// address (`SWITCHML_SWITCH`, or `MASTER_ADDR` with `SWITCHML_PORT`, default 48864)
    /// must be set somewhere.
    pub fn from_env() -> Result<CommConfig, Error> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`CommConfig::from_env`] over any variable source (tests pass a map).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<CommConfig, Error> {
        Settings::default().layered(None, var)?.config()
    }

    /// Read a TOML file alone (no environment): `rank`, `world_size` and `switch`
    /// ("host:port") are required, the other [`Settings::NAMES`] optional.
    pub fn from_file(path: &Path) -> Result<CommConfig, Error> {
        let file = Settings::from_file(path)?;
        let missing =
            |what: &str| Error::Config(format!("{}: `{what}` is missing", path.display()));
        if file.rank.is_none() {
            return Err(missing("rank"));
        }
        if file.world_size.is_none() {
            return Err(missing("world_size"));
        }
        if file.switch.is_none() {
            return Err(missing("switch"));
        }
        file.config()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::{DEFAULT_COUNT, DEFAULT_LANES, DEFAULT_WINDOW, IP_UDP_HEADERS};
    use std::collections::HashMap;

    /// An environment of `pairs`, for `from_vars`.
    pub(crate) fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
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
        ]))
        .unwrap();
        assert_eq!((s.lanes, s.window, s.count), (Some(1), Some(2), Some(3)));
        assert_eq!((s.rto_ms, s.max_rto_ms), (Some(4), Some(5)));
        assert_eq!((s.retries, s.join_timeout_ms), (Some(6), Some(7)));
        assert_eq!(s.coalesce_us, Some(8));
        let e = Settings::from_vars(vars(&[("SWITCHML_RTO_MS", "soon")])).unwrap_err();
        assert!(e.to_string().contains("SWITCHML_RTO_MS=\"soon\""), "{e}");
    }

    #[test]
    fn named_pairs_read_as_their_variables_and_an_unknown_name_is_an_error() {
        let s =
            Settings::from_pairs([("lanes", "4"), ("key", "5ec2e7"), ("timeout", "60")]).unwrap();
        assert_eq!(
            (s.lanes, s.key, s.timeout),
            (Some(4), Some(0x5EC2E7), Some(60))
        );
        let e = Settings::from_pairs([("lanse", "4")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown setting \"lanse\"") && e.contains("lanes"),
            "{e}"
        );
        let e = Settings::from_pairs([("window", "wide")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("window=\"wide\""), "{e}");
    }

    /// Each setting is one field: the file's key is its name, and its variable reads the
    /// same value; a key the list lacks is refused.
    #[test]
    fn every_setting_is_a_file_key_and_a_variable_with_the_same_meaning() {
        let value = |name: &str| match name {
            "switch" | "fallback_addr" => "127.0.0.1:9",
            "key" => "bee",
            "dialect" => "p4app",
            "non_finite" => "error",
            "io" => "xdp:xd-none",
            "congestion" => "on",
            "rank" => "0",
            _ => "7",
        };
        let toml: String = Settings::NAMES
            .iter()
            .map(|&n| match n {
                "switch" | "fallback_addr" | "key" | "dialect" | "non_finite" | "io"
                | "congestion" => {
                    format!("{n} = \"{}\"\n", value(n))
                }
                _ => format!("{n} = {}\n", value(n)),
            })
            .collect();
        let (dir, path) = file("every-key", &toml);
        let from_file = Settings::from_file(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let env: Vec<(String, &str)> = Settings::NAMES
            .iter()
            .map(|&n| (Settings::variable(n), value(n)))
            .collect();
        let from_env =
            Settings::from_vars(|v| env.iter().find(|(k, _)| k == v).map(|(_, t)| t.to_string()))
                .unwrap();
        assert_eq!(from_env.key, Some(0xBEE));
        assert_eq!(from_env.dialect, Some(Dialect::P4app));
        assert_eq!(from_env.non_finite, Some(NonFinitePolicy::Refuse));
        assert_eq!(from_env.io, Some(IoPath::Xdp("xd-none".into())));
        assert_eq!(from_env.congestion, Some(CongestionControl::DEFAULT_ON));
        assert_eq!(from_env.join_timeout_ms, Some(7));
        // Equal but for where the switch came from, which only error messages say.
        assert_eq!(
            Settings {
                switch_source: None,
                ..from_file
            },
            Settings {
                switch_source: None,
                ..from_env
            }
        );
        let (dir, path) = file("unknown-key", "lanes = 2\nlane = 3\n");
        let e = Settings::from_file(&path).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.to_string().contains("lane"), "{e}");
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
            rto_ms: Some(ms),
            ..Settings::default()
        };
        assert_eq!(rto(2).tune(base.clone()).max_rto, base.max_rto);
        assert_eq!(
            rto(30).tune(base.clone()).max_rto,
            Duration::from_millis(1200)
        );
        let both = Settings {
            max_rto_ms: Some(90),
            ..rto(30)
        };
        assert_eq!(both.tune(base).max_rto, Duration::from_millis(90));
    }

    #[test]
    fn a_default_contribution_fits_a_1500_byte_mtu() {
        let c = CommConfig::new(0, 2, "127.0.0.1:1".parse().unwrap(), 0);
        // The default count is the path's; on an ordinary Ethernet's that is 256.
        assert_eq!(c.count, crate::config::COUNT_FROM_PATH);
        let ethernet = switchml_core::worker::count_for_mtu(1500, IP_UDP_HEADERS, 1024);
        let c = CommConfig {
            count: ethernet,
            ..c
        };
        let datagram = c.lane(0, 1).max_datagram();
        assert_eq!(datagram, switchml_core::wire::data::HEADER_LEN + 4 * 256);
        assert!(datagram + IP_UDP_HEADERS <= 1500, "{datagram} bytes");
        // And the switch's default job holds the default layout.
        assert_eq!(
            c.slots(),
            u32::from(switchml_switchd::DEFAULT_JOB_SLOTS),
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

    #[test]
    fn the_settings_of_a_configuration_name_every_setting_and_make_it_again() {
        let c = CommConfig::builder(1, 3, "127.0.0.1:7000".parse().unwrap(), 4)
            .key(0xBEEF)
            .window(16)
            .coalesce(Duration::from_micros(300))
            .fallback("127.0.0.1:7100".parse::<std::net::SocketAddr>().unwrap())
            .build();
        let settings = Settings::of(&c);
        let names: Vec<&str> = settings.values().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, Settings::NAMES, "every setting, in order");
        assert_eq!(settings.config().unwrap(), c);
        let values = settings.values();
        let value = |name: &str| values.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        assert_eq!(value("window"), SettingValue::Number(16));
        assert_eq!(value("non_finite"), SettingValue::Text("propagate".into()));
        assert_eq!(value("congestion"), SettingValue::Text("off".into()));
        assert_eq!(value("dialect"), SettingValue::Text("switchml".into()));
        assert_eq!(value("io"), SettingValue::Text("socket".into()));
        let xdp = CommConfig {
            io: IoPath::Xdp("eth1".into()),
            ..c
        };
        assert_eq!(
            Settings::of(&xdp).config().unwrap(),
            xdp,
            "xdp:IF round-trips"
        );
    }
}
