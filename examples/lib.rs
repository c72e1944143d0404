//! Examples of switchml-rs, each a program of its own (`cargo run -p switchml-examples
//! --example NAME`) that `cargo test` also runs (`tests.rs`):
//!
//! - `allreduce`: an all-reduce from Rust in about ten lines: a software switch started in
//!   this process on loopback, and two communicators summing their tensors through it.
//! - `embedded_switch`: a program that embeds the switch: it serves a job, adds a second
//!   one at run time through the admin socket, lets ranks of both run, and reads the
//!   switch's counters per job.
//! - `sans_io`: the protocol core driven by hand, with no sockets, threads or clocks: two
//!   core `Worker`s and the core reference `Switch` exchanging bytes in a loop, time
//!   jumping to the next timer.
