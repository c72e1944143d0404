//! # switchml-worker
//!
//! The worker library of switchml-rs, the crate a training program links: a
//! [`Communicator`] joins a job at the switch and all-reduces `f32`, [`f16`](struct@f16),
//! [`bf16`] and `i32` tensors in place ([`Communicator::allreduce`], or
//! [`Communicator::allreduce_async`] with a [`Pending`] handle), driving the core's worker
//! state machine over the socket layer (`switchml-udp`).
//!
//! It is set up by a [`CommConfig`], from code or from [`Settings`] layered as arguments >
//! environment > TOML file > defaults. Its I/O threads, the *lanes*, each own a UDP socket
//! and a range of the job's slots and drive one core `Worker`; a tensor is split into one
//! contiguous part per lane (protocol.md §6). Given a fallback address
//! ([`CommConfig::fallback`]), the ranks also meet over TCP, and if the switch cannot serve
//! the job they all-reduce over a ring among themselves instead (`switchml-ring`), loudly
//! ([`FallbackStats`], docs/fallback.md).
//!
//! An all-reduce on loopback, with the software switch of `switchml-switchd` (`examples/`
//! has more):
//!
//! ```
//! use switchml_switchd::{JobSpec, RunningSwitch, SwitchConfig};
//! use switchml_worker::{CommConfig, Communicator, Op};
//!
//! let job = JobSpec { id: 1, world: 2, slots: 256, key: Some(0x5EC2E7) };
//! let switch = RunningSwitch::start(&SwitchConfig::new("127.0.0.1:0".parse()?, vec![job]))?;
//! let rank = |r: u16| {
//!     let config = CommConfig::builder(r, 2, switch.addr(), 1).key(0x5EC2E7).build();
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
//! Its one `unsafe` use is in `part`: the lanes write a caller's tensor in place, each its
//! own disjoint part, while the call that lent it waits.

#![warn(missing_docs)]

mod backoffs;
mod comm;
pub mod config;
#[cfg(feature = "p4app")]
mod dialect;
mod error;
mod fallback;
mod lane;
mod lane_io;
mod lane_log;
mod part;
mod settings;

pub use comm::{Communicator, Pending};
pub use config::{CommConfig, CommConfigBuilder, Dialect, IoPath, DEFAULT_JOB};
pub use error::{Error, ShapeSetting};
pub use fallback::FallbackStats;
pub use half::{bf16, f16};
pub use lane::Timing;
pub use part::Element;
pub use settings::{SettingValue, Settings};
pub use switchml_core::quant::{ElementType, Op};
pub use switchml_core::worker::NonFinitePolicy;
