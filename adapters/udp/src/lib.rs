//! # switchml-udp
//!
//! The switchml-rs host adapter over UDP: the code that gives the sans-IO protocol core
//! (`switchml-core`) sockets, threads and a clock, on both sides of the network.
//!
//! - **Worker side**: a [`Communicator`] joins a job at the switch and all-reduces `f32`
//!   and `i32` tensors in place ([`Communicator::allreduce`], or
//!   [`Communicator::allreduce_async`] with a [`Pending`] handle). Its I/O threads, the
//!   *lanes* ([`lane`]), each own a UDP socket and a range of the job's slots and drive one
//!   core `Worker`; a tensor is split into one contiguous part per lane ([`part`]).
//! - **Switch side**: the [`daemon`] serves real workers around the core's `Endpoint` (the
//!   reference switch, its lane table learned from accepted Joins, its run timer): it drops
//!   datagrams no answer can go to ([`source`]), emulates multicast by replication, can lose packets on
//!   purpose ([`loss`]) and counts everything ([`traffic`]). [`RunningSwitch`] runs it on
//!   a thread.
//!
//! Underneath: batched `recvmmsg`/`sendmmsg` ([`batch`]), socket buffers and `poll`
//! ([`socket`]), and the one place where OS time becomes core time ([`clock`]).
//!
//! What this crate does **not** do: any protocol decision. What to send, when to resend,
//! what a packet means, when to give up — the core decides, and this crate carries it out.

pub mod admin;
pub mod batch;
pub mod clock;
pub mod comm;
pub mod config;
pub mod daemon;
pub mod daemon_log;
pub mod error;
pub mod lane;
pub mod loss;
pub mod part;
pub mod running_switch;
mod sockaddr;
pub mod socket;
pub mod source;
pub mod traffic;

pub use comm::{Communicator, Pending};
pub use config::CommConfig;
pub use daemon::{Daemon, JobSpec};
pub use error::Error;
pub use lane::Timing;
pub use part::Element;
pub use running_switch::{RunningSwitch, SwitchConfig, SwitchPipeline};
pub use switchml_core::quant::{ElementType, Op};
pub use traffic::{DaemonCounters, JobTraffic};
