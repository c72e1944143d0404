//! # switchml-p4model
//!
//! A Rust model of the switchml-rs P4 program (`p4/v1model/`, `p4/tna/`), control by
//! control, so that the program's logic runs in `cargo test` against the reference switch
//! (`switchml_core::switch::Switch`) although no P4 compiler runs here. Each P4 file has a
//! twin module of the same name: `p4/v1model/bitmap_checker.p4` ↔ `bitmap_checker.rs`
//! with a `BitmapChecker`; `p4/README.md` has the whole table.
//!
//! What the model keeps from the hardware, because that is what shapes the P4 program:
//!
//! - **Registers** ([`register`]): one read-modify-write per register per pass, checked;
//!   state that needs more takes another pass.
//! - **Passes**: [`VALUES_PER_PASS`] values per pass, the block the packet carries at its
//!   front, as on Tofino where only that block fits the packet header vector. A packet of
//!   [`MAX_COUNT`] values is [`MAX_BLOCKS`] blocks: one pass each to load, add or read them
//!   ("consume", each block leaving the packet once its registers hold it), then, if the
//!   packet answers, one pass each to read the earlier blocks back ("harvest"), up to
//!   [`MAX_PASSES`] in all ([`next_step_selector`]). A Join or Leave that ends its job's run
//!   takes a second pass to clear the run's session ([`run_tracker`]).
//! - **Tables** with typed entries ([`classifier`], [`tier_selector`]) and a **packet
//!   replication engine** ([`replication`]) feeding the egress rewrite ([`udp_sender`]),
//!   which marks each copy of a Result by its port's queue depth ([`congestion_marker`]).
//! - **Two levels** (protocol.md §7): a job is flat, a parent or a child ([`tier_selector`]);
//!   a child's completed uses go up ([`Verdict::Up`]), its parent's Results are checked
//!   ([`parent_result`]), stored ([`relay`]) and multicast down, its Join goes up and its
//!   parent's `COMPLETE` comes down ([`run_tracker`]); the parent's Aborts come down as
//!   `ParentFailed`, and a child's run that ends owes its parent an Abort
//!   ([`Pipeline::poll_up`], [`UpAbort`]: a clone or mirror in P4).
//!
//! The data plane is [`Pipeline::process`] (frames) and [`Pipeline::process_datagram`]
//! (bare datagrams; also the `Aggregator` impl, see [`aggregator`]); both write into the
//! caller's buffer and allocate nothing. Joins, Statuses and Cookies go through the
//! switch's controller on the CPU port, which checks what a pipeline cannot (a Join's
//! HMAC tag, protocol.md §4.2): [`controller`], which `process_datagram` runs in the same
//! call. The control plane is in [`control_plane`].
//! The test harness (`p4/model/harness`, crate `switchml-p4model-harness`, a
//! dev-dependency only) feeds one packet sequence to the model and the reference and says
//! where they differ, and builds the BMv2 replay beds; so nothing of the tests is in this
//! library, nor in what links it.
//!
//! What the model does **not** show: timing, the interleaving of other packets between a
//! packet's passes (the model runs them back to back), and whether the P4 compiles. The
//! controller ([`controller`]) has no P4 twin: it is the software the programs send Joins,
//! Statuses and Cookies to, and it answers Status, counters included ([`status_handler`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod aggregator;
pub mod bitmap_checker;
pub mod classifier;
pub mod congestion_marker;
pub mod control_plane;
pub mod controller;
pub mod count_checker;
pub mod drop_counters;
pub mod exponents;
pub mod headers;
pub mod job_counters;
pub mod join_handler;
pub mod liveness;
pub mod next_step_selector;
pub mod overflow_flag;
pub mod p4gen;
pub mod parent_result;
pub mod parser;
pub mod pipeline;
pub mod probe_handler;
pub mod processor;
pub mod processors;
pub mod register;
pub mod relay;
pub mod replication;
pub mod reply_builder;
pub mod run_tracker;
pub mod status_handler;
pub mod tier_selector;
pub mod udp_sender;
pub mod use_checker;
pub mod validator;
pub mod workers_counter;

pub use classifier::{Source, WorkerAddr};
pub use control_plane::{ControlError, JobReport, SlotVersionState};
pub use pipeline::{Config, Pipeline, UpAbort, Verdict, FRAME_OUT_LEN, OUT_LEN};
pub use replication::Replica;
pub use udp_sender::SwitchAddr;

/// Values each pass handles: the value registers of one pipeline pass (16 fit one
/// Tofino 1 pipe with the other registers; `p4/README.md`, resources).
pub const VALUES_PER_PASS: usize = 16;
/// Blocks of [`VALUES_PER_PASS`] values in a packet of [`MAX_COUNT`] values; each value
/// register holds one cell per slot version and block.
pub const MAX_BLOCKS: usize = 16;
/// Passes a packet of [`MAX_COUNT`] values takes when it answers: every block consumed,
/// then every block but the last harvested.
pub const MAX_PASSES: usize = 2 * MAX_BLOCKS - 1;
/// The largest count the switch accepts (`max_count` in JoinReplies).
pub const MAX_COUNT: u16 = (VALUES_PER_PASS * MAX_BLOCKS) as u16;
