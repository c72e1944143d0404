//! Every example runs under `cargo test`, so none of them can rot.

#[path = "allreduce.rs"]
mod allreduce;
#[path = "embedded_switch.rs"]
mod embedded_switch;
#[path = "sans_io.rs"]
mod sans_io;

#[test]
fn allreduce_runs() {
    allreduce::main().expect("the allreduce example");
}

#[test]
fn embedded_switch_runs() {
    embedded_switch::main().expect("the embedded_switch example");
}

#[test]
fn sans_io_runs() {
    sans_io::main().expect("the sans_io example");
}
