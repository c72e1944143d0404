//! The P4 tree is laid out control by control, each control has its Rust twin, and the
//! generated files are the generator's current output.

use std::path::PathBuf;

use switchml_p4model::p4gen;

fn p4_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every control of the programs: each is declared for both targets, in
/// `p4/<target>/<control>.p4` or, when the two targets share it, in `p4/include/<control>.p4`,
/// and has a Rust twin `p4/model/src/<control>.rs`.
const CONTROLS: [&str; 20] = [
    "parser",
    "validator",
    "classifier",
    "use_checker",
    "count_checker",
    "bitmap_checker",
    "workers_counter",
    "exponents",
    "processor",
    "processors",
    "overflow_flag",
    "next_step_selector",
    "join_handler",
    "run_tracker",
    "probe_handler",
    "status_handler",
    "reply_builder",
    "drop_counters",
    "job_counters",
    "udp_sender",
];

#[test]
fn the_generated_p4_files_are_current() {
    for (path, text) in p4gen::files() {
        let committed = std::fs::read_to_string(p4_dir().join(&path))
            .unwrap_or_else(|e| panic!("p4/{path}: {e}"));
        assert!(
            committed == text,
            "p4/{path} is stale: run `cargo run -p switchml-p4model --bin gen_p4`"
        );
    }
}

#[test]
fn every_control_exists_for_both_targets_and_has_a_rust_twin() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    for control in CONTROLS {
        let file = |target: &str| {
            let own = p4_dir().join(target).join(format!("{control}.p4"));
            let shared = p4_dir().join("include").join(format!("{control}.p4"));
            let path = if own.is_file() { own } else { shared };
            std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{control}.p4 for {target}: {}: {e}", path.display()))
        };
        let twin = src.join(format!("{control}.rs"));
        assert!(twin.is_file(), "missing twin {}", twin.display());
        let rust = std::fs::read_to_string(&twin).unwrap();
        let type_name: String = control
            .split('_')
            .map(|w| w[..1].to_uppercase() + &w[1..])
            .collect();
        let declared = rust.contains(&format!("pub struct {type_name}"))
            || rust.contains(&format!("pub struct {type_name} "));
        // The parser twin is `Parser`; every control's type is named after its file.
        assert!(declared, "{} declares no `{type_name}`", twin.display());
        let (v1, tna) = (file("v1model"), file("tna"));
        let p4_name = if control == "parser" {
            "SwitchmlParser"
        } else {
            type_name.as_str()
        };
        for (t, text) in [("v1model", &v1), ("tna", &tna)] {
            assert!(
                text.contains(&format!("control {p4_name}("))
                    || text.contains(&format!("parser {p4_name}(")),
                "p4/{t}/{control}.p4 declares no `{p4_name}`"
            );
        }
    }
}
