//! # switchml-sim
//!
//! A discrete-event simulator for switchml-rs at data-centre scale: the core's **unchanged**
//! worker state machines and its reference switch (served by the core's `Endpoint`, as the
//! UDP daemon serves it) exchange real datagrams over modelled links, so the time an
//! all-reduce takes, the link utilisation and the cost of loss come from the protocol
//! itself, not from a model of it.
//!
//! The layers, bottom up (ns-3's split of channel from node):
//!
//! - [`clock`]: simulated nanoseconds and the conversion to the core's microseconds.
//! - [`link`]: a one-way link — a FIFO transmit queue with byte and packet limits (tail
//!   drop) feeding a channel with a rate (serialisation), a propagation delay and seeded
//!   random loss.
//! - [`events`]: the event queue (a binary heap; time jumps to the next arrival or timer).
//! - [`scenario`]: what one run is — ranks, links, tensor, `k`, pool size, timeouts, seed,
//!   a straggler.
//! - [`in_network`]: the SwitchML all-reduce on a star (one uplink and one downlink per
//!   rank); [`tiered`]: the same through two levels of switches (protocol.md §7), child
//!   switches of up to 256 ranks under a parent; [`ring`]: the ring all-reduce baseline on
//!   the same links.
//! - [`analytic`]: closed-form bounds from bytes on the wire; [`report`]: what a run
//!   reports (completion time, elements/s, utilisation, resends, drops) and its JSON.
//!
//! Everything random comes from the scenario's seed, so a run replays exactly. The binary
//! (`switchml-sim --help`) runs one scenario; `sim/figures` runs the experiments of the
//! paper and plots them (`docs/simulation.md`).
//!
//! Congestion (`--competing-flow`, `--mark-kib`, `--congestion`): tail-drop queues that may
//! mark, a bulk Reno flow ([`reno`]) on rank 0's uplink, and the workers' congestion window
//! (protocol.md §6.3), reported over time by [`in_network::simulate_shared`].
//!
//! What it does **not** model: host CPU (workers answer instantly), PCIe, the switch's
//! pipeline passes (it forwards at line rate after a fixed latency),
//! and loss on the ring's transport.

pub mod analytic;
mod bucket;
pub mod clock;
pub mod events;
mod host;
pub mod in_network;
pub mod link;
pub mod reno;
pub mod report;
pub mod ring;
pub mod scenario;
pub mod tiered;

pub use report::RunReport;
pub use scenario::{Direction, Dtype, LossOn, Scenario, Straggler, SwitchModel};
