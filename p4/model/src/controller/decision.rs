//! The controller's decision on a message the pipeline sent it, which the pipeline acts
//! on. Apart from the controller's code (`controller.rs`) for the same reason as
//! `cookies.rs`.

use switchml_core::switch::DropReason;

/// What the controller does with a message the pipeline sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Send it back through the CPU port, taken as from the port it came in on.
    Inject,
    /// Answer its sender with `out[..len]`, a datagram to `rank` of `job`.
    Answer {
        /// The job.
        job: u16,
        /// The rank the answer names.
        rank: u16,
        /// Bytes written.
        len: usize,
    },
    /// Nothing to send; counted as this drop.
    Drop(DropReason),
}
