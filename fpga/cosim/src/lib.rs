//! Co-simulation of the FPGA aggregator (`fpga/rtl/`) against the reference switch.
//!
//! The RTL is the data path only: Contributions and Probes in, Results, ProbeReplies and a
//! Probe's Abort refusals out, every other packet dropped with a counted reason — except
//! Join, Abort, Status and Leave, which it passes to the host port for the control plane
//! (`fpga/README.md`). Here the reference switch is both the expected data path and that
//! control plane:
//!
//! - [`Session`] feeds each packet to the reference and writes it into a *script*; after
//!   every control-plane packet or operation it writes into the script the register writes
//!   that bring the RTL's job table to the reference's state (job, world, slot range,
//!   session), as the host CPU would. It records what the RTL must do: which packets go to
//!   the host, each data-path packet's verdict, each answer's bytes and destination.
//! - The Verilator harness (`fpga/cosim/harness/main.cpp`) plays the script into the RTL,
//!   stalling input and outputs at random, and writes what came out.
//! - [`compare`] reads that back and names the first packet whose treatment differs,
//!   byte for byte, then checks the RTL's drop counters.
//!
//! [`golden`] replays `tests/vectors/` this way; [`random`] makes seeded packet sequences
//! (duplicates, reordering, junk, foreign jobs, restarts); [`perf`] times back-to-back
//! Contributions.

pub mod compare;
pub mod golden;
pub mod perf;
pub mod random;
pub mod session;

pub use compare::{compare, Mismatch, RtlRun, Summary};
pub use session::{Answer, DataVerdict, Expected, Session};

/// Pool slots of the RTL build the harness uses (`-GSLOTS`), and of the reference.
pub const SLOTS: usize = 32;
/// Job table entries of the RTL build (`-GJOBS`), and of the reference.
pub const JOBS: usize = 4;
/// The largest count the RTL build holds (`-GK_MAX`); sessions set `max_count` up to it.
pub const K_MAX: usize = 256;
