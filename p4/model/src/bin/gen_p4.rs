//! Write the generated P4 files (`switchml_p4model::p4gen`) under `p4/`.
//!
//! ```text
//! cargo run -p switchml-p4model --bin gen_p4 [P4_DIR]   # default: the crate's ../
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."));
    for (path, text) in switchml_p4model::p4gen::files() {
        let path = root.join(path);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("gen_p4: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
