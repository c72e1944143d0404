//! What a communicator is: [`CommConfig`], its defaults, and the checks of its settings
//! against each other. Where the settings come from (arguments, the environment a launcher
//! sets, a TOML file) and which wins is [`Settings`](crate::Settings)'s business.
//!
//! Every rank of a job must use the same `lanes`, `window` and `count`: they fix which
//! slots each part of a tensor travels on (protocol.md §6). The switch agrees them at Join
//! (§4.1): a rank whose values are not its run's fails to connect with [`Error::Shape`],
//! which names the job's value. The defaults are defined here once, and the `switchml`
//! command uses them too, so ranks that set nothing agree.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use switchml_core::time::Duration as CoreDuration;
use switchml_core::worker::{
    count_for_mtu, Config as LaneConfig, CongestionControl, LaneLayout, NonFinitePolicy,
};

use switchml_udp::clock::{to_core, to_std};

use crate::error::Error;

/// Everything a communicator needs. Made by [`CommConfig::new`] (the defaults) or
/// [`CommConfig::builder`], or from [`Settings`](crate::Settings); it may grow fields, so
/// code outside this crate builds it through those, never as a struct literal.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommConfig {
    /// This worker's rank, `0..world`.
    pub rank: u16,
    /// The number of ranks.
    pub world: u16,
    /// The switch's UDP address.
    pub switch: SocketAddr,
    /// The job id registered at the switch.
    pub job: u16,
    /// I/O threads, each with its own socket and slot range.
    pub lanes: u16,
    /// Slots per lane; the job needs `lanes × window` slots at the switch.
    pub window: u16,
    /// Values per packet (`k`), or [`COUNT_FROM_PATH`] (0, the default): the largest power
    /// of two up to 1,024 whose datagram fits the path MTU to the switch, which the kernel
    /// reports when the communicator connects (256 on a 1500-byte Ethernet, 1,024 on
    /// loopback or jumbo frames; protocol.md §6). The communicator's
    /// [`config`](crate::Communicator::config) holds the count it chose.
    pub count: u16,
    /// First retransmission timeout.
    pub rto: Duration,
    /// Largest retransmission timeout.
    pub max_rto: Duration,
    /// Timeouts of one use (each a Probe or a resend) before the lane probes the switch
    /// for the ranks it waits on and gives up.
    pub retries: u16,
    /// How long a collective waits for a peer that the switch still hears, a rank that is
    /// alive but busy (`SWITCHML_TIMEOUT`, `timeout`, seconds; default 30 minutes, as
    /// torch's). A dead peer is named by the switch within its dead interval instead
    /// (protocol.md §4.3).
    pub timeout: Duration,
    /// The most time a lane in a run lets pass without sending: then it sends a keep-alive
    /// Probe, so that the switch hears it is alive (protocol.md §4.3; default 250 ms).
    pub keep_alive: Duration,
    /// How long to wait for every rank to join.
    pub join_timeout: Duration,
    /// How long a lane lets datagrams gather after the first one wakes it, before reading
    /// them in one batch (zero: at once). On a link that delivers results one by one (a
    /// shaped link) a lane otherwise wakes for every one or two; a few hundred
    /// microseconds cut its wake-ups, and its CPU time, several-fold at the cost of that
    /// much more round trip. At most half of `rto`.
    pub coalesce: Duration,
    /// The job's credential (protocol.md §4.1): `SWITCHML_JOB_KEY` (hex) or `key` in the
    /// file; the switch's `--job ID:WORLD:SLOTS:KEY` must say the same.
    pub key: u64,
    /// Where rank 0 listens for the fallback rendezvous (`SWITCHML_FALLBACK_ADDR`,
    /// `fallback_addr`); `None`, the default, turns the fallback off. With it, the ranks
    /// meet there when they connect, and if the switch cannot serve the job they
    /// all-reduce over a TCP ring among themselves instead, loudly (`crate::fallback`).
    pub fallback: Option<SocketAddr>,
    /// How long the fallback waits for a peer at any step before it fails, naming the
    /// peer (`SWITCHML_FALLBACK_TIMEOUT_MS`, `fallback_timeout_ms`).
    pub fallback_timeout: Duration,
    /// The protocol spoken (`SWITCHML_DIALECT`, `dialect`): ours, or `p4app`, the original
    /// SwitchML's (docs/p4app.md). With `p4app`, `switch` is the original controller's gRPC
    /// address (port 50099), `count` is 64 or 256, and lanes, window, key and fallback do
    /// not apply: the worker joins in the original client's order and sends the dialect's
    /// frames from UDP port 4000 to the switch the controller names.
    pub dialect: Dialect,
    /// What a float tensor holding a NaN or ±∞ does (`SWITCHML_NON_FINITE`, `non_finite`:
    /// `propagate` or `error`): travel like Gloo's, every rank getting non-finite values
    /// over the chunks that held them (the default, protocol.md §5.4), or be refused with
    /// [`Error::NonFinite`] before anything is sent. Likewise a float sum beyond the
    /// type's range: ±∞, or [`Error::Overflow`].
    pub non_finite: NonFinitePolicy,
    /// Whether each lane adapts its window of slots in flight to congestion
    /// (`SWITCHML_CONGESTION`, `congestion`: `on` or `off`; protocol.md §6.3). Off by
    /// default, the core's default.
    pub congestion: CongestionControl,
    /// How the lanes' datagrams move (`SWITCHML_IO`, `io`: `socket` or `xdp:IF`): UDP
    /// sockets, or AF_XDP on interface IF, lane `l` on its receive queue `l` with its
    /// socket beside it (`switchml_xdp::Io`); where XDP is unavailable the lanes say why
    /// (a warning) and use their sockets.
    pub io: IoPath,
}

/// How a communicator's lanes move datagrams.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum IoPath {
    /// UDP sockets (`socket`).
    #[default]
    Socket,
    /// AF_XDP on this interface (`xdp:IF`).
    Xdp(String),
}

impl std::fmt::Display for IoPath {
    /// The setting's text, as [`IoPath`]'s `FromStr` reads it: `socket` or `xdp:IF`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IoPath::Socket => f.write_str("socket"),
            IoPath::Xdp(iface) => write!(f, "xdp:{iface}"),
        }
    }
}

impl std::str::FromStr for IoPath {
    type Err = String;

    fn from_str(s: &str) -> Result<IoPath, String> {
        match s.split_once(':') {
            _ if s == "socket" => Ok(IoPath::Socket),
            Some(("xdp", iface)) if !iface.is_empty() => Ok(IoPath::Xdp(iface.to_string())),
            _ => Err(format!("io {s:?}: expected socket or xdp:INTERFACE")),
        }
    }
}

/// The protocol a communicator speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dialect {
    /// Ours (docs/protocol.md).
    #[default]
    Switchml,
    /// The original SwitchML's (docs/protocol.md §8); needs the `p4app` feature.
    P4app,
}

impl Dialect {
    /// Return the dialect's name, as [`str::parse`] reads it: `switchml` or `p4app`.
    pub const fn name(self) -> &'static str {
        match self {
            Dialect::Switchml => "switchml",
            Dialect::P4app => "p4app",
        }
    }
}

impl std::str::FromStr for Dialect {
    type Err = Error;

    fn from_str(s: &str) -> Result<Dialect, Error> {
        match s.trim() {
            "switchml" => Ok(Dialect::Switchml),
            "p4app" => Ok(Dialect::P4app),
            other => Err(Error::Config(format!(
                "dialect {other:?} is neither \"switchml\" nor \"p4app\""
            ))),
        }
    }
}

/// The job a worker joins when no setting names one: 1, as `switchml switch --job 1:N`,
/// every example and the torch backend's embedded switch use.
pub const DEFAULT_JOB: u16 = 1;

/// Default lanes per worker: two I/O threads keep a second core busy without crowding a
/// small host.
pub const DEFAULT_LANES: u16 = 2;
/// Default slots per lane: 2 × 128 = 256 slots, the switch's default per job
/// (`JobSpec`'s `DEFAULT_JOB_SLOTS`).
pub const DEFAULT_WINDOW: u16 = 128;
/// `count` 0: the values per packet come from the path MTU to the switch
/// ([`CommConfig::sized_for_path`]).
pub const COUNT_FROM_PATH: u16 = 0;
/// Default values per packet: from the path ([`COUNT_FROM_PATH`]). A Contribution is a
/// 24-byte header and 4 bytes per value; with IP and UDP's 28 bytes, `count` ≤ 362 fits a
/// 1500-byte MTU, and 256 is the largest power of two that does (1,076 bytes on the wire);
/// loopback (65,536) and jumbo frames take 1,024, the software switch's largest.
pub const DEFAULT_COUNT: u16 = COUNT_FROM_PATH;
/// The count when the path's MTU cannot be read: 256, which fits an ordinary Ethernet.
pub const SAFE_COUNT: u16 = 256;
/// The dialect's count when none is set: 64, the only size a standard Tofino pipe serves.
pub const P4APP_DEFAULT_COUNT: u16 = 64;
/// Default first retransmission timeout, the floor under the measured one: the core's
/// [`HOST_RTO`](switchml_core::worker::HOST_RTO), 20 ms, where the reasons are. Lower it
/// (`SWITCHML_RTO_MS`) where losses are real and hosts idle.
pub const DEFAULT_RTO: Duration =
    Duration::from_micros(switchml_core::worker::HOST_RTO.total_micros());
/// Default fallback timeout: 120 s, time for a slow rank to reach the same tensor.
pub const DEFAULT_FALLBACK_TIMEOUT: Duration = Duration::from_secs(120);
/// The IPv4 and UDP headers in front of every datagram.
pub const IP_UDP_HEADERS: usize = 28;

impl CommConfig {
    /// A configuration with the defaults: 2 lanes × 128 slots, 256 values per packet,
    /// 20 ms first timeout ([`DEFAULT_RTO`]) doubling to 200 ms, 30 resends unanswered,
    /// 30 minutes for a busy peer, a keep-alive every 250 ms, 30 s to join.
    pub fn new(rank: u16, world: u16, switch: SocketAddr, job: u16) -> CommConfig {
        let core = LaneConfig::for_host(job, rank, world);
        CommConfig {
            rank,
            world,
            switch,
            job,
            lanes: DEFAULT_LANES,
            window: DEFAULT_WINDOW,
            count: DEFAULT_COUNT,
            rto: to_std(core.rto),
            max_rto: to_std(core.max_rto),
            retries: core.retries,
            timeout: to_std(core.timeout),
            keep_alive: to_std(core.keep_alive),
            join_timeout: to_std(core.join_timeout),
            coalesce: Duration::ZERO,
            key: 0,
            fallback: None,
            fallback_timeout: DEFAULT_FALLBACK_TIMEOUT,
            dialect: Dialect::Switchml,
            non_finite: core.non_finite,
            io: IoPath::Socket,
            congestion: core.congestion,
        }
    }

    /// Check the settings against each other.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        if self.world == 0 || self.rank >= self.world {
            return bad(format!("rank {} is not in 0..{}", self.rank, self.world));
        }
        // The layout's bounds are the core's (lanes × window, the window, the count); a
        // count from the path is checked once chosen (`sized_for_path`).
        let mut layout = self.layout();
        if self.count == COUNT_FROM_PATH {
            layout.count = match self.dialect {
                Dialect::Switchml => SAFE_COUNT,
                Dialect::P4app => P4APP_DEFAULT_COUNT,
            };
        }
        if let Err(e) = layout.check(crate::lane::MAX_WINDOW) {
            return bad(e.to_string());
        }
        if self.rto.is_zero()
            || self.max_rto < self.rto
            || self.join_timeout.is_zero()
            || self.fallback_timeout.is_zero()
            || self.timeout.is_zero()
            || self.keep_alive.is_zero()
        {
            return bad("timeouts must be non-zero and max_rto ≥ rto".into());
        }
        if self.dialect == Dialect::P4app {
            if let Err(e) = layout.check_p4app() {
                return bad(e.to_string());
            }
        }
        if self.coalesce > self.rto / 2 {
            return bad(format!(
                "coalesce {:?} is more than half of rto {:?}",
                self.coalesce, self.rto
            ));
        }
        Ok(())
    }

    /// Return this configuration with its count decided: as set, or ([`COUNT_FROM_PATH`])
    /// the largest power of two up to `max` whose datagram fits the path MTU to the switch
    /// (the core's `count_for_mtu`), [`SAFE_COUNT`] if the kernel cannot say, and
    /// [`P4APP_DEFAULT_COUNT`] for the dialect. Every rank on the same kind of path picks
    /// the same; a rank whose path differs is refused with the run's count
    /// ([`Error::Shape`]), never sends what its path cannot carry.
    pub fn sized_for_path(&self, max: u16) -> CommConfig {
        if self.count != COUNT_FROM_PATH {
            return self.clone();
        }
        let count = match self.dialect {
            Dialect::P4app => P4APP_DEFAULT_COUNT,
            Dialect::Switchml => match switchml_udp::mtu::path_mtu(self.switch) {
                Ok(mtu) => {
                    let headers = switchml_udp::mtu::ip_udp_headers(&self.switch);
                    let count = count_for_mtu(mtu, headers, max);
                    log::info!(
                        "rank {}: {count} values per packet (path MTU {mtu} to {})",
                        self.rank,
                        self.switch
                    );
                    count
                }
                Err(e) => {
                    log::warn!(
                        "rank {}: the path MTU to {} is unknown ({e}): {SAFE_COUNT} values per packet",
                        self.rank,
                        self.switch
                    );
                    SAFE_COUNT.min(max)
                }
            },
        };
        CommConfig {
            count,
            ..self.clone()
        }
    }

    /// Return the number of job slots this configuration drives.
    pub fn slots(&self) -> u32 {
        self.layout().job_slots()
    }

    /// Return the lane layout (protocol.md §6) every rank of the job must share.
    pub fn layout(&self) -> LaneLayout {
        LaneLayout {
            lanes: self.lanes,
            lane_slots: self.window,
            count: self.count,
        }
    }

    /// Return the core configuration of lane `lane` of the worker process `nonce`.
    pub fn lane(&self, lane: u16, nonce: u32) -> LaneConfig {
        LaneConfig {
            key: self.key,
            nonce,
            // `validate` bounds lanes × window by the 16-bit slot space.
            slot_lo: self.layout().slot_lo(lane).unwrap_or(0),
            window: self.window,
            count: self.count,
            lanes: self.lanes,
            rto: to_core(self.rto),
            max_rto: to_core(self.max_rto),
            retries: self.retries,
            timeout: to_core(self.timeout),
            keep_alive: to_core(self.keep_alive),
            join_interval: CoreDuration::from_millis(100).min(to_core(self.join_timeout)),
            join_timeout: to_core(self.join_timeout),
            non_finite: self.non_finite,
            congestion: self.congestion,
            ..LaneConfig::new(self.job, self.rank, self.world)
        }
    }
}

/// Builds a [`CommConfig`] from [`CommConfig::new`]'s defaults, one setting at a time:
/// `CommConfig::builder(rank, world, switch, job).key(k).lanes(4).build()`. Nothing is
/// checked until [`CommConfig::validate`] (which `Communicator::connect` calls).
#[derive(Debug, Clone)]
#[must_use]
pub struct CommConfigBuilder(CommConfig);

/// A setter of the builder per field it sets.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty,)*) => {
        impl CommConfigBuilder {
            $($(#[$doc])* pub fn $name(mut self, value: $ty) -> Self {
                self.0.$name = value;
                self
            })*
        }
    };
}

setters! {
    /// Set this worker's rank.
    rank: u16,
    /// Set the number of ranks.
    world: u16,
    /// Set the switch's address.
    switch: SocketAddr,
    /// Set the job id.
    job: u16,
    /// Set the number of lanes (I/O threads).
    lanes: u16,
    /// Set the slots per lane.
    window: u16,
    /// Set the values per packet.
    count: u16,
    /// Set the first retransmission timeout.
    rto: Duration,
    /// Set the largest retransmission timeout.
    max_rto: Duration,
    /// Set the timeouts of one use before giving up.
    retries: u16,
    /// Set how long to wait for a busy peer.
    timeout: Duration,
    /// Set how often an idle lane proves it is alive.
    keep_alive: Duration,
    /// Set how long to wait for every rank to join.
    join_timeout: Duration,
    /// Set the receive coalescing.
    coalesce: Duration,
    /// Set the job's key.
    key: u64,
    /// Set how long the fallback waits for a peer.
    fallback_timeout: Duration,
    /// Set the protocol spoken.
    dialect: Dialect,
    /// Set what a float tensor holding a NaN or ±∞ does.
    non_finite: NonFinitePolicy,
    /// Set how the lanes move datagrams.
    io: IoPath,
    /// Set whether lanes adapt their window of slots in flight to congestion.
    congestion: CongestionControl,
}

impl CommConfigBuilder {
    /// Set where rank 0 listens for the fallback rendezvous (`None`: no fallback).
    pub fn fallback(mut self, at: impl Into<Option<SocketAddr>>) -> Self {
        self.0.fallback = at.into();
        self
    }

    /// Return the configuration.
    #[must_use]
    pub fn build(self) -> CommConfig {
        self.0
    }
}

impl CommConfig {
    /// Start a configuration from the defaults of [`CommConfig::new`].
    pub fn builder(rank: u16, world: u16, switch: SocketAddr, job: u16) -> CommConfigBuilder {
        CommConfigBuilder(CommConfig::new(rank, world, switch, job))
    }

    /// Start a configuration from this one.
    pub fn into_builder(self) -> CommConfigBuilder {
        CommConfigBuilder(self)
    }
    /// Return what the fallback ring needs of this configuration.
    pub(crate) fn ring(&self) -> switchml_ring::RingConfig {
        switchml_ring::RingConfig {
            rank: self.rank,
            world: self.world,
            job: self.job,
            key: self.key,
            timeout: self.fallback_timeout,
        }
    }
}

/// Resolve `host:port`, naming the setting it came from when it fails.
pub fn resolve(setting: &str, text: &str) -> Result<SocketAddr, Error> {
    text.to_socket_addrs()
        .map_err(|e| Error::Config(format!("{setting}={text:?}: {e}")))?
        .next()
        .ok_or_else(|| Error::Config(format!("{setting}={text:?} resolves to no address")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::vars;

    #[test]
    fn environment_with_master_addr_fallback() {
        let c = CommConfig::from_vars(vars(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "4"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("SWITCHML_JOB", "9"),
        ]))
        .unwrap();
        assert_eq!((c.rank, c.world, c.job), (1, 4, 9));
        assert_eq!(c.switch, "127.0.0.1:48864".parse().unwrap());
        let c = CommConfig::from_vars(vars(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("SWITCHML_SWITCH", "127.0.0.1:5000"),
            ("MASTER_ADDR", "10.0.0.1"),
        ]))
        .unwrap();
        assert_eq!(c.switch.port(), 5000);
    }

    #[test]
    fn missing_and_bad_variables_are_named() {
        let e = CommConfig::from_vars(vars(&[("WORLD_SIZE", "2")])).unwrap_err();
        assert_eq!(e.to_string(), "configuration: RANK is not set");
        let e = CommConfig::from_vars(vars(&[("RANK", "x"), ("WORLD_SIZE", "2")])).unwrap_err();
        assert!(e.to_string().contains("RANK=\"x\""), "{e}");
        let e = CommConfig::from_vars(vars(&[("RANK", "0"), ("WORLD_SIZE", "2")])).unwrap_err();
        assert!(e.to_string().contains("SWITCHML_SWITCH"), "{e}");
        let e = CommConfig::from_vars(vars(&[
            ("RANK", "2"),
            ("WORLD_SIZE", "2"),
            ("SWITCHML_SWITCH", "127.0.0.1:1"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("rank 2 is not in 0..2"), "{e}");
    }

    #[test]
    fn the_job_key_comes_from_the_environment_or_the_file_and_must_be_hex() {
        let base = [
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("SWITCHML_SWITCH", "127.0.0.1:1"),
        ];
        let with = |key: &str| {
            let mut v = base.to_vec();
            v.push(("SWITCHML_JOB_KEY", key));
            CommConfig::from_vars(vars(&v))
        };
        assert_eq!(CommConfig::from_vars(vars(&base)).unwrap().key, 0);
        assert_eq!(with("0x00c0ffee").unwrap().key, 0xC0FFEE);
        let e = with("not-hex").unwrap_err();
        assert!(e.to_string().contains("SWITCHML_JOB_KEY"), "{e}");
        let dir = std::env::temp_dir().join(format!("switchml-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("worker.toml");
        let file = "rank = 0\nworld_size = 2\nswitch = \"127.0.0.1:1\"\n";
        std::fs::write(&path, format!("{file}key = \"beef\"\n")).unwrap();
        assert_eq!(CommConfig::from_file(&path).unwrap().key, 0xBEEF);
        std::fs::write(&path, format!("{file}key = \"xyz\"\n")).unwrap();
        let e = CommConfig::from_file(&path).unwrap_err();
        assert!(e.to_string().contains("key \"xyz\""), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn coalescing_may_not_eat_the_timeout() {
        let mut c = CommConfig::new(0, 2, "127.0.0.1:1".parse().unwrap(), 0);
        assert_eq!(c.coalesce, Duration::ZERO, "off unless asked for");
        c.rto = Duration::from_millis(4);
        c.coalesce = Duration::from_millis(2);
        assert!(c.validate().is_ok());
        c.coalesce = Duration::from_micros(2001);
        let e = c.validate().unwrap_err();
        assert!(e.to_string().contains("half of rto"), "{e}");
    }

    #[test]
    fn the_cores_layout_bounds_are_config_errors() {
        let base = CommConfig::new(0, 2, "127.0.0.1:1".parse().unwrap(), 0);
        let refused = |c: CommConfig| match c.validate() {
            Err(Error::Config(m)) => m,
            other => panic!("{other:?}"),
        };
        let mut c = base.clone();
        (c.lanes, c.window) = (65, 1024);
        assert_eq!(
            refused(c),
            "lanes × window = 66560 slots is more than 65536"
        );
        let mut c = base.clone();
        c.window = 0;
        assert_eq!(refused(c), "lanes and window must be at least 1");
        let mut c = base.clone();
        c.count = 16371;
        assert_eq!(refused(c), "count 16371 is not in 1..=16370");
        let mut c = base.clone();
        c.count = COUNT_FROM_PATH;
        assert!(c.validate().is_ok(), "0: from the path");
        let mut c = base.clone();
        (c.dialect, c.count) = (Dialect::P4app, 128);
        assert_eq!(
            refused(c.clone()),
            "count 128 is not 64 or 256, the p4app dialect's sizes"
        );
        c.count = 64;
        assert!(c.validate().is_ok());
    }

    #[test]
    fn a_count_from_the_path_fits_its_mtu_and_a_set_count_stays() {
        let lo = CommConfig::new(0, 2, "127.0.0.1:9".parse().unwrap(), 1);
        assert_eq!(lo.count, COUNT_FROM_PATH);
        // Loopback's MTU (65,536) takes the largest, bounded by the switch's.
        assert_eq!(lo.sized_for_path(1024).count, 1024);
        assert_eq!(lo.sized_for_path(256).count, 256);
        let set = CommConfig {
            count: 100,
            ..lo.clone()
        };
        assert_eq!(set.sized_for_path(1024).count, 100);
        let dialect = CommConfig {
            dialect: Dialect::P4app,
            ..lo
        };
        assert_eq!(dialect.sized_for_path(1024).count, P4APP_DEFAULT_COUNT);
    }

    #[test]
    fn toml_file_and_lane_slot_ranges() {
        let dir = std::env::temp_dir().join(format!("switchml-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("worker.toml");
        std::fs::write(
            &path,
            "rank = 3\nworld_size = 4\nswitch = \"127.0.0.1:7000\"\njob = 2\nlanes = 3\nwindow = 16\nrto_ms = 2\ncoalesce_us = 400\n",
        )
        .unwrap();
        let c = CommConfig::from_file(&path).unwrap();
        assert_eq!(
            (c.rank, c.world, c.job, c.lanes, c.window),
            (3, 4, 2, 3, 16)
        );
        assert_eq!(c.rto, Duration::from_millis(2));
        assert_eq!(c.coalesce, Duration::from_micros(400));
        assert_eq!(c.lane(2, 1).slot_lo, 32);
        assert_eq!(c.slots(), 48);
        std::fs::write(
            &path,
            "rank = 0\nworld_size = 1\nswitch = \"127.0.0.1:1\"\nbogus = 1\n",
        )
        .unwrap();
        let e = CommConfig::from_file(&path).unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        std::fs::write(&path, "rank = 0\nswitch = \"127.0.0.1:1\"\n").unwrap();
        let e = CommConfig::from_file(&path).unwrap_err();
        assert!(e.to_string().contains("`world_size` is missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
