//! Print what the model sends for each golden vector on the replay test bed
//! (`switchml_p4model::testbed`), for `p4/replay/replay.sh` to compare with BMv2.
//!
//! ```text
//! expected [VECTORS]        # default tests/vectors/wire.txt; writes to stdout:
//!   [name]
//!   in <port> <hex frame>
//!   out <port> <hex frame>  # zero or more, in replica order
//! expected --cli            # the simple_switch_CLI commands of the test bed
//! ```
//!
//! Vectors run in file order through one switch, so state carries over as it does on BMv2.

use std::process::ExitCode;

use switchml_p4model::testbed;
use switchml_tests::vectors;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn main() -> ExitCode {
    let arg = std::env::args().nth(1);
    if arg.as_deref() == Some("--cli") {
        print!("{}", testbed::cli_commands());
        return ExitCode::SUCCESS;
    }
    let text = match arg {
        Some(path) => match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("expected: {path}: {e}");
                return ExitCode::FAILURE;
            }
        },
        None => vectors::WIRE.to_string(),
    };
    let vectors = match vectors::load(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("expected: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut p = testbed::pipeline();
    for v in vectors {
        let (port, frame) = testbed::frame(&v.bytes);
        println!("[{}]\nin {port} {}", v.name, hex(&frame));
        for (port, out) in testbed::outputs(&mut p, port, &frame) {
            println!("out {port} {}", hex(&out));
        }
    }
    ExitCode::SUCCESS
}
