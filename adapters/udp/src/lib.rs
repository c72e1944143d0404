//! # switchml-udp
//!
//! The switchml-rs host adapter over UDP: the code that gives the sans-IO protocol core
//! (`switchml-core`) sockets, threads and a clock, on both sides of the network.
//!
//! - **Worker side**: a [`Communicator`] joins a job at the switch and all-reduces `f32`,
//!   [`f16`](struct@f16), [`bf16`] and `i32` tensors in place ([`Communicator::allreduce`], or
//!   [`Communicator::allreduce_async`] with a [`Pending`] handle). It is set up by a
//!   [`CommConfig`], from code or from [`Settings`] layered as arguments > environment >
//!   TOML file > defaults. Its I/O threads, the *lanes*, each own a UDP socket and a range
//!   of the job's slots and drive one core `Worker`; a tensor is split into one contiguous
//!   part per lane (protocol.md §6). Given a fallback address ([`CommConfig::fallback`]),
//!   the ranks also meet over TCP, and if the switch cannot serve the job they all-reduce
//!   over a ring among themselves instead, loudly ([`FallbackStats`], docs/fallback.md).
//! - **Switch side**: a [`RunningSwitch`] serves real workers on a thread of this process,
//!   around the core's `Endpoint` (the reference switch, its lane table learned from
//!   accepted Joins, its run timer): it drops datagrams no answer can go to, emulates
//!   multicast by replication, can lose packets on purpose and counts everything
//!   ([`DaemonCounters`]). [`admin_request`] talks to a running switch's admin socket.
//!   A switch can be one level of two (protocol.md §7): [`SwitchConfig::parent_jobs`]
//!   are jobs whose ranks are child switches, [`SwitchConfig::child_jobs`] ([`ChildSpec`])
//!   jobs whose sums go up to a parent.
//!
//! Underneath (private): batched `recvmmsg`/`sendmmsg`, socket buffers and `poll`, and the
//! one place where OS time becomes core time.
//!
//! An all-reduce on loopback, switch included (`examples/` has more):
//!
//! ```
//! use switchml_udp::{CommConfig, Communicator, JobSpec, Op, RunningSwitch, SwitchConfig};
//!
//! let job = JobSpec { id: 1, world: 2, slots: 256, key: Some(0x5EC2E7) };
//! let switch = RunningSwitch::start(&SwitchConfig::new("127.0.0.1:0".parse()?, vec![job]))?;
//! let rank = |r: u16| {
//!     let config = CommConfig { key: 0x5EC2E7, ..CommConfig::new(r, 2, switch.addr(), 1) };
//!     let comm = Communicator::connect(&config).expect("every rank joins");
//!     let mut x = vec![1.0 + f32::from(r); 1000];
//!     comm.allreduce(&mut x, Op::Sum).map(|()| x)
//! };
//! let sums = std::thread::scope(|s| [s.spawn(|| rank(0)), s.spawn(|| rank(1))].map(|t| t.join()));
//! for sum in sums {
//!     assert!(sum.expect("no panic")?.iter().all(|&v| v == 3.0));
//! }
//! switch.stop()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What this crate does **not** do: any protocol decision. What to send, when to resend,
//! what a packet means, when to give up — the core decides, and this crate carries it out.

#![warn(missing_docs)]

mod admin;
mod batch;
mod clock;
mod comm;
pub mod config;
mod daemon;
mod daemon_log;
#[cfg(feature = "p4app")]
mod dialect;
mod error;
mod fallback;
mod lane;
mod lane_log;
mod log_limit;
mod loss;
mod offload;
mod part;
mod rendezvous;
mod ring;
mod ring_reduce;
mod running_switch;
mod settings;
mod shards;
mod sockaddr;
mod socket;
mod source;
mod source_limit;
mod traffic;
mod tree;

pub use admin::request as admin_request;
pub use comm::{Communicator, Pending};
pub use config::{parse_non_finite, CommConfig, Dialect};
pub use daemon::{parse_key, JobSpec, DEFAULT_JOB_SLOTS};
pub use error::{Error, ShapeSetting};
pub use fallback::FallbackStats;
pub use half::{bf16, f16};
pub use lane::Timing;
pub use part::Element;
pub use running_switch::{fresh_key, RunningSwitch, SwitchConfig, SwitchPipeline};
pub use settings::Settings;
pub use shards::default_shards;
pub use source_limit::SourceLimits;
pub use switchml_core::quant::{ElementType, Op};
pub use switchml_core::worker::NonFinitePolicy;
pub use traffic::{DaemonCounters, JobTraffic};
pub use tree::{ChildSpec, PARENT_SILENCE};

/// The longest datagram the software switch reads whole (a Result of the largest count it
/// serves, 1,024 values); a longer one is dropped and counted as oversized.
pub const MAX_DATAGRAM: usize = running_switch::SoftSwitch::OUT_LEN;
