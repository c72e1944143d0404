//! The image's settings, from its semihosting command line: `KEY=VALUE` words, e.g.
//!
//! ```text
//! rank=0 world=3 job=7 key=7e5700005ec2e700 nonce=9f3a1c switch=10.0.2.2:48864
//! elements=65536 iterations=3 dtype=i32 seed=1 window=8 count=256 rto=20 timeout=60
//! ```
//!
//! `rank`, `world`, `job` and `switch` are required; the rest default to [`Args::DEFAULT`].
//! `key` and `nonce` are hex, like `SWITCHML_JOB_KEY`. The nonce (protocol.md §4.1: this
//! process's incarnation) should be random per boot: the test script draws it from
//! /dev/urandom; without one the image derives it from the NIC's free-running counter at
//! boot, which differs between boots only by timing.

use smoltcp::wire::Ipv4Address;

/// What to reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// 32-bit integers, summed exactly.
    I32,
    /// 32-bit floats, quantized per block.
    F32,
}

/// The image's settings.
#[derive(Debug, Clone, Copy)]
pub struct Args {
    pub rank: Option<u16>,
    pub world: Option<u16>,
    pub job: Option<u16>,
    pub switch: Option<(Ipv4Address, u16)>,
    pub key: u64,
    pub nonce: Option<u32>,
    /// This node's address and prefix length.
    pub ip: (Ipv4Address, u8),
    /// The default gateway (QEMU's user-mode network: 10.0.2.2).
    pub gateway: Ipv4Address,
    /// The local UDP port.
    pub port: u16,
    pub elements: usize,
    /// All-reduces of the tensor; with several, the first (which waits for every rank to
    /// join) is left out of the rate.
    pub iterations: u32,
    pub dtype: Dtype,
    /// Input seed, as `switchml worker --seed`.
    pub seed: u64,
    pub window: u16,
    pub count: u16,
    /// First retransmission timeout, ms.
    pub rto_ms: u64,
    /// Seconds before the image gives up on the whole run.
    pub timeout_s: u64,
}

impl Args {
    /// The defaults: QEMU user-mode addressing, a 64 Ki-element i32 tensor, 8 slots of 256
    /// values (the host workers must use the same window and count, and one lane). Eight
    /// Results of 1 KiB fit the LAN9118's RX data FIFO (about 10 KiB); sixteen overflow it
    /// when they arrive in a burst, and the chip drops frames.
    pub const DEFAULT: Args = Args {
        rank: None,
        world: None,
        job: None,
        switch: None,
        key: 0,
        nonce: None,
        ip: (Ipv4Address::new(10, 0, 2, 15), 24),
        gateway: Ipv4Address::new(10, 0, 2, 2),
        port: 48864,
        elements: 65536,
        iterations: 1,
        dtype: Dtype::I32,
        seed: 1,
        window: 8,
        count: 256,
        rto_ms: 20,
        timeout_s: 120,
    };

    /// Parse the command line (its first word, the program name, is skipped).
    pub fn parse(line: &str) -> Result<Args, &str> {
        let mut a = Args::DEFAULT;
        for word in line.split_ascii_whitespace().skip(1) {
            let (k, v) = word.split_once('=').ok_or(word)?;
            let bad = || word;
            match k {
                "rank" => a.rank = Some(v.parse().map_err(|_| bad())?),
                "world" => a.world = Some(v.parse().map_err(|_| bad())?),
                "job" => a.job = Some(v.parse().map_err(|_| bad())?),
                "switch" => a.switch = Some(endpoint(v).ok_or_else(bad)?),
                "key" => a.key = hex(v).ok_or_else(bad)?,
                "nonce" => {
                    let n = u32::try_from(hex(v).ok_or_else(bad)?).map_err(|_| bad())?;
                    a.nonce = Some(n).filter(|&n| n != 0);
                }
                "ip" => {
                    let (ip, prefix) = v.split_once('/').ok_or_else(bad)?;
                    a.ip = (
                        ip.parse().map_err(|_| bad())?,
                        prefix.parse().map_err(|_| bad())?,
                    );
                }
                "gw" => a.gateway = v.parse().map_err(|_| bad())?,
                "port" => a.port = v.parse().map_err(|_| bad())?,
                "elements" => a.elements = v.parse().map_err(|_| bad())?,
                "iterations" => a.iterations = v.parse().map_err(|_| bad())?,
                "dtype" => {
                    a.dtype = match v {
                        "i32" => Dtype::I32,
                        "f32" => Dtype::F32,
                        _ => return Err(word),
                    }
                }
                "seed" => a.seed = v.parse().map_err(|_| bad())?,
                "window" => a.window = v.parse().map_err(|_| bad())?,
                "count" => a.count = v.parse().map_err(|_| bad())?,
                "rto" => a.rto_ms = v.parse().map_err(|_| bad())?,
                "timeout" => a.timeout_s = v.parse().map_err(|_| bad())?,
                _ => return Err(word),
            }
        }
        Ok(a)
    }
}

fn endpoint(s: &str) -> Option<(Ipv4Address, u16)> {
    let (ip, port) = s.split_once(':')?;
    Some((ip.parse().ok()?, port.parse().ok()?))
}

/// 1 to 16 hex digits, an optional `0x`: the key's text form, one parser for every rank.
fn hex(s: &str) -> Option<u64> {
    switchml_core::auth::parse_key(s).ok()
}
