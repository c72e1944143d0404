//! The P4 tree is laid out control by control, each control has its Rust twin, and the
//! generated files are the generator's current output. The TNA program has two builds, flat
//! (the default) and tiered (`-DSWITCHML_TIERS`, protocol.md §7); the text checks run on
//! each file as the C preprocessor p4c runs leaves it for both (`preprocess`).

use std::path::PathBuf;

use switchml_p4model::p4gen;

mod p4_rules;
// The P4 text reader tofino_rules.rs uses; this file needs its preprocessor only.
#[allow(dead_code)]
mod p4text;

use p4text::{p4_dir, preprocess};

/// Every control of the programs: each is declared for both targets, in
/// `p4/<target>/<control>.p4` or, when the two targets share it, in `p4/include/<control>.p4`,
/// and has a Rust twin `p4/model/src/<control>.rs`.
const CONTROLS: [&str; 23] = [
    "parser",
    "validator",
    "tier_selector",
    "classifier",
    "parent_result",
    "use_checker",
    "count_checker",
    "bitmap_checker",
    "workers_counter",
    "relay",
    "exponents",
    "processor",
    "processors",
    "overflow_flag",
    "next_step_selector",
    "join_handler",
    "run_tracker",
    "probe_handler",
    "reply_builder",
    "drop_counters",
    "job_counters",
    "udp_sender",
    "congestion_marker",
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

/// The macro that turns the TNA program's two-level aggregation on (p4/tna/switchml.p4).
const TIERS: &str = "SWITCHML_TIERS";

/// The text of `p4/<path>`, preprocessed alone with `TIERS` defined or not.
fn read_built(path: &str, tiers: bool) -> String {
    let text = std::fs::read_to_string(p4_dir().join(path)).unwrap();
    let mut defined = if tiers {
        vec![TIERS.to_string()]
    } else {
        vec![]
    };
    preprocess(&text, &mut defined)
}

/// The whole program `p4/<target>/switchml.p4` as p4c sees it, with `TIERS` defined or not:
/// every `#include "…"` inlined where it stands, the macros shared across files.
fn program(target: &str, tiers: bool) -> String {
    fn inline(path: PathBuf, defined: &mut Vec<String>, out: &mut String) {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in preprocess(&text, defined).lines() {
            match line.trim().strip_prefix("#include \"") {
                Some(name) => {
                    let name = name.trim_end_matches('"');
                    inline(path.parent().unwrap().join(name), defined, out);
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    let mut defined = if tiers {
        vec![TIERS.to_string()]
    } else {
        vec![]
    };
    let mut out = String::new();
    inline(
        p4_dir().join(target).join("switchml.p4"),
        &mut defined,
        &mut out,
    );
    out
}

/// The `.p4` files of `dir` under `p4/`, with their text as preprocessed with `TIERS`
/// defined or not (each file alone).
fn p4_built(dir: &str, tiers: bool) -> Vec<(PathBuf, String)> {
    p4_sources(dir)
        .into_iter()
        .map(|(p, text)| {
            let mut defined = if tiers {
                vec![TIERS.to_string()]
            } else {
                vec![]
            };
            let text = preprocess(&text, &mut defined);
            (p, text)
        })
        .collect()
}

/// The `.p4` files of `dir` under `p4/`, with their text.
fn p4_sources(dir: &str) -> Vec<(PathBuf, String)> {
    let mut files: Vec<_> = std::fs::read_dir(p4_dir().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "p4"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The files of every directory, in both builds, as the rules read them.
fn every_built_file() -> impl Iterator<Item = (String, String)> {
    ["include", "v1model", "tna"]
        .into_iter()
        .flat_map(|dir| [(dir, false), (dir, true)])
        .flat_map(|(dir, tiers)| {
            p4_built(dir, tiers)
                .into_iter()
                .map(move |(p, text)| (format!("{} (tiers: {tiers})", p.display()), text))
        })
}

/// BMv2 names the fields of the metadata copies p4c makes for a control applied from two
/// places wrongly, and a Tofino stage runs a register once per pass: every instance
/// (`Type() name;`) and table is applied from one place, in either build
/// (`p4_rules::repeated_applications`).
#[test]
fn every_control_instance_is_applied_from_one_place() {
    for (file, text) in every_built_file() {
        assert_eq!(p4_rules::repeated_applications(&text), [""; 0], "{file}");
    }
}

/// BMv2 takes only fields as parser select keys: no `lastIndex` (`p4_rules`).
#[test]
fn no_parser_selects_on_a_stack_index() {
    for (file, text) in every_built_file() {
        assert_eq!(p4_rules::stack_index_selects(&text), [""; 0], "{file}");
    }
}

/// p4c's BMv2 back end rejects a `%` or `/` of operands that are not compile-time constants
/// (issue 31, `v1model/join_handler.p4`), and Tofino has no divider: none in either
/// program, either build (`p4_rules::runtime_divisions`).
#[test]
fn no_program_divides_at_run_time() {
    for target in ["v1model", "tna"] {
        for tiers in [false, true] {
            let text = program(target, tiers);
            let found = p4_rules::runtime_divisions(&text);
            assert_eq!(found, [""; 0], "{target} (tiers: {tiers})");
        }
    }
}

/// BMv2 zeroes what a recirculation does not preserve, standard metadata included (issue
/// 31: a multi-pass answer left on port 0): everything the TNA program bridges to its next
/// pass is in v1model's recirculation field list, and the ingress port is read from
/// standard metadata in pass 0 only (`p4_rules::unpreserved_recirculation_reads`).
#[test]
fn what_a_v1model_pass_reads_survives_recirculation() {
    let text = program("v1model", true);
    assert_eq!(p4_rules::unpreserved_recirculation_reads(&text), [""; 0]);
    assert!(text.contains("standard_metadata.egress_spec = v1.ingress_port;"));
}

/// Neither target divides (issue 31): both join handlers look the Join's lane up in the
/// same control-plane table, the one the replay beds' commands fill (`testbed::Bed`).
#[test]
fn both_join_handlers_look_the_lane_up_in_lane_alignment() {
    for t in ["v1model", "tna"] {
        let text = p4_rules::code(&read_built(&format!("{t}/join_handler.p4"), true));
        for line in [
            "action lane_aligned(bit<16> index) {",
            "table lane_alignment {",
            "hdr.join.slot_count : exact;",
            "hdr.join.slot_lo    : exact;",
            "lane_alignment.apply();",
        ] {
            assert!(text.contains(line), "{t}/join_handler.p4: {line}");
        }
    }
    let commands = switchml_p4model_harness::testbed::cli_commands();
    assert!(commands.contains("table_add lane_alignment lane_aligned 8 16 => 2\n"));
}

/// Tofino does not zero metadata: the TNA parser writes every field of `metadata_t`, in
/// either build.
#[test]
fn the_tna_parser_writes_every_metadata_field() {
    for tiers in [false, true] {
        the_tna_parser_writes_every_metadata_field_of(tiers);
    }
}

fn the_tna_parser_writes_every_metadata_field_of(tiers: bool) {
    let headers = read_built("include/headers.p4", tiers);
    let parser = read_built("tna/parser.p4", tiers);
    let start = headers.find("struct metadata_t {").unwrap();
    let body = &headers[start..];
    let body = &body[..body.find("\n}").unwrap()];
    let mut fields = 0;
    for line in body.lines().skip(1) {
        let code = line.split("//").next().unwrap().trim();
        let Some(decl) = code.strip_suffix(';') else {
            continue;
        };
        let field = decl.rsplit(' ').next().unwrap();
        assert!(
            parser.contains(&format!("meta.{field} = ")),
            "p4/tna/parser.p4 leaves meta.{field} unwritten"
        );
        fields += 1;
    }
    assert!(fields > 50, "{fields}");
}

/// A Tofino ingress has no stage left after the overflow flag's (p4/README.md,
/// "Resources"): the TNA program counts `job_overflows` in its egress, from the Result's flag
/// byte, indexed by the job table entry the egress bridge header carries; v1model counts it
/// in its ingress. The model's `JobCounters::result` is that counter. Both TNA builds.
#[test]
fn job_overflows_counts_in_the_tna_egress() {
    for tiers in [false, true] {
        job_overflows_counts_in_the_tna_egress_of(tiers);
    }
}

fn job_overflows_counts_in_the_tna_egress_of(tiers: bool) {
    let read = |path: &str| read_built(path, tiers);
    let counters = read("tna/job_counters.p4");
    let (ingress, egress) = counters
        .split_once("control JobEgressCounters(")
        .expect("tna/job_counters.p4 declares JobEgressCounters");
    assert!(!ingress.contains(") job_overflows;") && !ingress.contains("job_overflows.count("));
    assert!(egress.contains(") job_overflows;"));
    assert!(egress.contains("job_overflows.count(hdr.egress_bridge.job_index)"));
    let main = read("tna/switchml.p4");
    let (ingress, egress) = main.split_once("control SwitchmlEgress(").unwrap();
    assert!(ingress.contains("hdr.egress_bridge.job_index = meta.job_index;"));
    assert!(egress.contains("JobEgressCounters() job_egress_counters;"));
    assert!(egress.contains("job_egress_counters.apply("));
    assert!(read("tna/parser.p4").contains("TYPE_RESULT: parse_result;"));
    assert!(read("v1model/job_counters.p4").contains("job_overflows.count("));
}

/// Two levels (protocol.md §7): a parent's JoinReply's bitmap is parsed into `bitmap_in` and
/// never sent; every answer's bitmap is the three stacks `bitmap_writer.p4` fills; the tier
/// is known before the classifier (whose job table a parent's message reaches through
/// `child_job`); and what goes up leaves by the parent's port. The tiered build.
#[test]
fn the_tier_paths_are_wired_on_both_targets() {
    let read = |path: &str| read_built(path, true);
    for t in ["v1model", "tna"] {
        let main = read(&format!("{t}/switchml.p4"));
        assert!(
            !main.contains("emit(hdr.bitmap_in)"),
            "{t}: bitmap_in is sent"
        );
        if let Some((_, deparser)) = main.split_once("control SwitchmlIngressDeparser(") {
            let deparser = deparser.split("control ").next().unwrap_or_default();
            assert!(
                !deparser.contains("packet.emit(hdr);"),
                "{t}: emits bitmap_in"
            );
        }
        for stack in ["bitmap_lead", "bitmap", "bitmap_tail"] {
            assert!(
                main.contains(&format!("packet.emit(hdr.{stack});")),
                "{t}: {stack} is not sent"
            );
        }
        let tier = main
            .find("tier_selector.apply(")
            .expect("the tier selector");
        let classifier = main.find("classifier.apply(").expect("the classifier");
        assert!(tier < classifier, "{t}: the tier after the classifier");
        assert!(main.contains("VERDICT_UP"), "{t}: nothing goes up");
        let parser = read(&format!("{t}/parser.p4"));
        assert!(
            parser.contains("TYPE_JOIN_REPLY): parse_join_reply;"),
            "{t}"
        );
        assert!(parser.contains("TYPE_RESULT): parse_data;"), "{t}");
        assert!(parser.contains("hdr.bitmap_in.next"), "{t}");
    }
    assert!(read("include/classifier.p4").contains("key = { meta.lookup_job : exact; }"));
    let replies = read("include/reply_builder.p4");
    assert_eq!(replies.matches("write_bitmap(hdr, ").count(), 3);
}

/// Aborts across two levels (protocol.md §7) on both targets: an Abort of a child's
/// parent's job is the parent's (`MSG_PARENT_ABORT`, from table `child_job`), checked at
/// `parent` and ended in a second pass as `ParentFailed` to the child's ranks, and counted
/// (a duplicate only from the child's member in the session `parent_echo` kept); a child's
/// run ended by a worker's Abort or a restart sends a second packet up, a clone (v1model)
/// or an ingress mirror (TNA) that the egress rewrites into the Abort up. The tiered build.
#[test]
fn aborts_cross_the_levels_on_both_targets() {
    let read = |path: &str| read_built(path, true);
    let tier = read("include/tier_selector.p4");
    assert!(tier.contains("meta.message = MSG_PARENT_ABORT;"));
    assert!(read("include/parent_result.p4").contains("MSG_PARENT_ABORT"));
    assert!(read("include/reply_builder.p4").contains("ABORT_PARENT_FAILED"));
    for t in ["v1model", "tna"] {
        let main = read(&format!("{t}/switchml.p4"));
        assert!(
            main.contains("|| meta.abort_reason == ABORT_PARENT_FAILED) {"),
            "{t}: ParentFailed is not multicast"
        );
        assert!(main.contains("hdr.abort.epoch = 0;"), "{t}: no Abort up");
        let run = read(&format!("{t}/run_tracker.p4"));
        for word in [
            "MSG_PARENT_ABORT",
            "ABORT_PARENT_FAILED",
            "meta.up_reason = ABORT_WORKER_FAILED;",
            "meta.up_reason = ABORT_RANK_RESTARTED;",
            "(echoed == 1) ? DROP_DUPLICATE : DROP_BAD_SESSION;",
            "parent_echo",
        ] {
            assert!(run.contains(word), "{t}/run_tracker.p4: {word}");
        }
        let counters = read(&format!("{t}/job_counters.p4"));
        assert!(counters.contains("meta.message == MSG_PARENT_ABORT"), "{t}");
        let drops = read(&format!("{t}/drop_counters.p4"));
        assert!(drops.contains("aborts_up.count(0);"), "{t}");
    }
    let v1 = read("v1model/switchml.p4");
    assert!(v1.contains("clone_preserving_field_list(CloneType.I2E,"));
    assert!(v1.contains("PKT_INSTANCE_TYPE_INGRESS_CLONE)"));
    let tna = read("tna/switchml.p4");
    assert!(tna.contains("mirror.emit<sml_up_mirror_h>("));
    assert!(tna.contains("if (hdr.up_mirror.isValid()) {"));
    let parser = read("tna/parser.p4");
    assert!(parser.contains("0xF: parse_up_mirror;"));
}

/// Issue 25 item 5: a child keeps the parent run's session that `parent` held in
/// `parent_echo` wherever it forgets it (a run that ends, a Join that opens the next), as
/// the model's `RunTracker` and the reference's `Run::echo` do, and a parent's Abort from
/// its member counts as a duplicate only in that session. Both targets, the tiered build.
#[test]
fn a_child_keeps_the_parent_session_it_forgets_on_both_targets() {
    // Each `(what forgets parent, what keeps its session)` pair, within a few lines.
    let kept = |text: &str, forget: &str, keep: &str| {
        let places: Vec<usize> = text.match_indices(forget).map(|(at, _)| at).collect();
        assert!(!places.is_empty(), "{forget}");
        for at in places {
            let next = &text[at..(at + 240).min(text.len())];
            assert!(next.contains(keep), "{forget} without {keep}");
        }
    };
    let tna = p4_rules::code(&read_built("tna/run_tracker.p4", true));
    kept(&tna, "= reset_parent.execute(j);", "keep_echo.execute(j);");
    kept(&tna, "= join_parent.execute(j);", "keep_echo.execute(j);");
    assert_eq!(tna.matches("check_echo.execute(j)").count(), 1);
    let v1 = p4_rules::code(&read_built("v1model/run_tracker.p4", true));
    kept(
        &v1,
        "parent.write(j, 0);",
        "parent_echo.write(j, parent_held);",
    );
    assert_eq!(v1.matches("parent_echo.read(").count(), 1);
    for (t, text) in [("tna", &tna), ("v1model", &v1)] {
        assert!(
            text.contains("(echoed == 1) ? DROP_DUPLICATE : DROP_BAD_SESSION;"),
            "{t}"
        );
    }
}

/// What only two levels need (protocol.md §7), by the construct that declares it: a table,
/// a register, a header stack or instance, a control's use.
const TIER_ONLY: [&str; 17] = [
    ") aborts_up;",
    "table child_job",
    "table parent_link",
    ") relay;",
    ") parent;",
    ") parent_echo;",
    "bitmap_in",
    "hdr.bitmap_lead",
    "hdr.bitmap_tail",
    "hdr.up_mirror",
    "Mirror() mirror;",
    "TierSelector() tier_selector;",
    "ParentResult() parent_result;",
    "tier_selector.apply(",
    "parent_result.apply(",
    "relay.apply(",
    "meta.parent_port;",
];

/// The default TNA build is flat, the layout p4/README.md's Resources table places in 12
/// stages: none of the tier's tables (a control plane cannot install a parent or a child job
/// in it), registers, header stacks (a flat bitmap is at most 8 bytes) or mirror. `-DSWITCHML_TIERS` builds all of them, and
/// the v1model program always does (it defines the macro itself, as the model is tiered).
#[test]
fn the_default_tna_build_is_flat() {
    let code = |text: String| -> String {
        let lines = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or_default());
        lines.collect::<Vec<_>>().join("\n")
    };
    let flat = code(program("tna", false));
    let tiered = code(program("tna", true));
    for construct in TIER_ONLY {
        assert!(!flat.contains(construct), "flat TNA build: {construct}");
        assert!(tiered.contains(construct), "tiered TNA build: {construct}");
    }
    // The flat parser gives the job table its key; a parent's message is UnexpectedType.
    assert!(flat.contains("meta.lookup_job = hdr.prefix.job;"));
    assert!(flat.contains("meta.drop_reason = DROP_UNEXPECTED_TYPE;"));
    assert!(flat.contains("key = { meta.lookup_job : exact; }"));
    let v1model = code(program("v1model", false));
    assert!(
        v1model == code(program("v1model", true)),
        "v1model: not always tiered"
    );
    for construct in TIER_ONLY
        .iter()
        .filter(|c| !["hdr.up_mirror", "Mirror() mirror;"].contains(c))
    {
        assert!(v1model.contains(construct), "v1model: {construct}");
    }
}

/// A pipeline cannot compute an HMAC (protocol.md §4.2): neither program, in either build,
/// compares or carries a key (`p4_rules::admission::key_comparisons`).
#[test]
fn no_program_compares_a_key() {
    for target in ["v1model", "tna"] {
        for tiers in [false, true] {
            let found = p4_rules::admission::key_comparisons(&program(target, tiers));
            assert_eq!(found, [""; 0], "{target} (tiers: {tiers})");
        }
    }
}

/// A Join, Status or Cookie that did not come from the CPU port goes there, and the data
/// plane handles a Join only from it and answers no Status, in both programs and builds
/// (`p4_rules::admission::joins_outside_the_cpu_port`).
#[test]
fn a_join_or_status_is_the_pipelines_only_from_the_cpu_port() {
    for target in ["v1model", "tna"] {
        for tiers in [false, true] {
            let text = program(target, tiers);
            let found = p4_rules::admission::joins_outside_the_cpu_port(&text);
            assert_eq!(found, [""; 0], "{target} (tiers: {tiers})");
            let parser = p4_rules::code(&read_built(&format!("{target}/parser.p4"), tiers));
            assert!(
                parser.contains("packet.extract(hdr.packet_out);")
                    && parser.contains("from_cpu = 1;"),
                "{target}: the parser takes packet_out on the CPU port"
            );
        }
    }
}

/// The ProbeReply echoes the Probe's session at bytes 24–27, its bitmap from 28
/// (protocol.md §3.5; `p4_rules::admission::probe_reply_session`).
#[test]
fn the_probe_reply_names_the_probes_session() {
    for target in ["v1model", "tna"] {
        let found = p4_rules::admission::probe_reply_session(&program(target, true));
        assert_eq!(found, [""; 0], "{target}");
    }
}
