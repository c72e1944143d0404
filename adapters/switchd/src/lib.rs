//! # switchml-switchd
//!
//! The software switch of switchml-rs: a daemon that serves real workers over UDP around
//! the core's `Endpoint` (the reference switch, or the P4 model with `--pipeline p4-model`),
//! on a thread per shard of this process.
//!
//! A [`RunningSwitch`] ([`SwitchConfig`]) drops datagrams no answer can go to, emulates
//! multicast by replication, can lose packets on purpose and counts everything
//! ([`DaemonCounters`]). [`admin_request`] talks to a running switch's admin socket. A
//! switch can be one level of two (protocol.md §7): [`SwitchConfig::parent_jobs`] are jobs
//! whose ranks are child switches, [`SwitchConfig::child_jobs`] ([`ChildSpec`]) jobs whose
//! sums go up to a parent. Jobs are written as the operator writes them ([`JobSpec`]).
//!
//! Its sockets are the socket layer's (`switchml-udp`); it has no `unsafe` code of its own.
//! What it does **not** do: any protocol decision. Admission, slots, versions and sums are
//! the core's.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod admin;
mod backlog_mark;
mod daemon;
mod daemon_log;
mod job;
mod metrics;
mod running_switch;
mod shards;
mod source_limit;
mod traffic;
mod tree;

pub use admin::request as admin_request;
pub use admin::{AdminRequest, AdminSocket};
pub use job::{key_from_env, JobSpec, DEFAULT_JOB_SLOTS};
pub use metrics::MetricsEndpoint;
pub use running_switch::{RunningSwitch, SwitchConfig, SwitchPipeline};
pub use shards::default_shards;
pub use source_limit::SourceLimits;
pub use switchml_udp::fresh::fresh_key;
pub use traffic::{DaemonCounters, JobTraffic};
pub use tree::{ChildSpec, PARENT_SILENCE};

/// The longest datagram the software switch reads whole (a Result of the largest count it
/// serves, 1,024 values); a longer one is dropped and counted as oversized.
pub const MAX_DATAGRAM: usize = daemon::SoftSwitch::OUT_LEN;
