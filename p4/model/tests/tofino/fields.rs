//! What is read before it is written: metadata the parser leaves unwritten, constants
//! nothing uses, and copies a RegisterAction reads (p4test's warnings, issue 31).

use crate::p4text::{
    close_of, is_constant, is_whole_field, line_of, parser_states, register_actions, split_top,
    struct_fields, tna_program,
};
/// The fields of `metadata_t` that the ingress parser's start state does not write before
/// its transition, or reads before it writes them.
fn metadata_violations(text: &str, parser: &str) -> Vec<String> {
    let fields = struct_fields(text, "metadata_t");
    let states = parser_states(text, parser);
    let start = states
        .iter()
        .find(|s| s.name == "start")
        .expect("a start state");
    let body = &start.body[..start.body.find("transition").unwrap_or(start.body.len())];
    let mut bad = Vec::new();
    for (_, field) in fields {
        let write = body.find(&format!("meta.{field} = "));
        let read = body
            .match_indices(&format!("meta.{field}"))
            .find(|(at, m)| {
                let after = &body[at + m.len()..];
                !after.starts_with(" = ")
                    && !after.starts_with(|c: char| c.is_alphanumeric() || c == '_')
            });
        match (write, read) {
            (None, _) => bad.push(format!("meta.{field} is not written first")),
            (Some(w), Some((r, _))) if r < w => bad.push(format!("meta.{field} is read first")),
            _ => {}
        }
    }
    bad
}

#[test]
fn the_ingress_parser_writes_every_metadata_field_first_in_both_builds() {
    for tiers in [false, true] {
        let text = tna_program(tiers);
        let bad = metadata_violations(&text, "SwitchmlParser");
        assert!(bad.is_empty(), "tiers {tiers}: {bad:#?}");
    }
}

#[test]
fn planted_metadata_reads_are_reported() {
    let text = "
        struct metadata_t { bit<1> a; bit<8> b; bit<8> c; }
        parser P(packet_in packet, out metadata_t meta) {
            state start {
                meta.a = 0;
                meta.c = meta.b;
                meta.b = 1;
                transition accept;
            }
        }";
    let bad = metadata_violations(text, "P");
    assert_eq!(bad, ["meta.b is read first"]);
    let missing = text.replace("meta.a = 0;", "");
    let bad = metadata_violations(&missing, "P");
    assert_eq!(bad, ["meta.a is not written first", "meta.b is read first"]);
}

// ---------------------------------------------------------------------------------------

/// The `const` declarations of `text` that nothing else in it names.
fn unused_constants(text: &str) -> Vec<String> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices("const ")
        .filter(|(at, _)| !word(text[..*at].chars().last()))
        .filter_map(|(at, _)| {
            let decl = &text[at..at + text[at..].find('=')?];
            let name = decl.split_whitespace().last()?.to_string();
            let uses = text
                .match_indices(name.as_str())
                .filter(|(u, m)| {
                    !word(text[..*u].chars().last()) && !word(text[u + m.len()..].chars().next())
                })
                .count();
            (uses < 2).then_some(name)
        })
        .collect()
}

#[test]
fn every_constant_is_used_in_both_builds() {
    for tiers in [false, true] {
        let unused = unused_constants(&tna_program(tiers));
        assert!(unused.is_empty(), "tiers {tiers}: {unused:?}");
    }
    let planted = "const bit<8> A = 1; const bit<8> B = 2; x = A;";
    assert_eq!(unused_constants(planted), ["B"]);
}

// ---------------------------------------------------------------------------------------

/// The parameters of `control name(…)` in `text`, in order (constructor parameters not
/// included).
fn control_params(text: &str, name: &str) -> Vec<String> {
    let Some(at) = text.find(&format!("control {name}(")) else {
        return Vec::new();
    };
    let open = at + text[at..].find('(').unwrap();
    split_top(&text[open + 1..close_of(text, open) - 1], ",")
        .iter()
        .filter_map(|p| p.split_whitespace().last().map(str::to_string))
        .collect()
}

/// The names a RegisterAction body reads that are neither its own parameters, nor fields
/// of `hdr` or `meta`, nor constants: they must be parameters of the control declaring it,
/// passed a whole field of `hdr` or `meta` (or a constant) wherever that control is
/// applied, or p4test reads the copy it makes as uninitialised.
fn action_read_violations(text: &str) -> Vec<String> {
    const KEYWORDS: [&str; 8] = ["if", "else", "bit", "int", "max", "min", "true", "false"];
    let mut bad = Vec::new();
    for (_, name, params, body, line) in register_actions(text) {
        let own: Vec<&str> = params
            .split(',')
            .filter_map(|p| p.split_whitespace().last())
            .collect();
        // The control that declares this action: the last `control X(` before its line.
        let at: usize = text
            .split_inclusive('\n')
            .take(line - 1)
            .map(str::len)
            .sum();
        let control = text[..at]
            .rfind("control ")
            .map(|c| text[c + 8..].split('(').next().unwrap().trim().to_string())
            .unwrap_or_default();
        let control_params = control_params(text, &control);
        let mut names = Vec::new();
        let mut rest = body.as_str();
        while let Some(start) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
            let before = rest[..start].chars().last();
            let word: String = rest[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[start + word.len()..];
            let after_dot = before == Some('.');
            let literal = before.is_some_and(|c| c.is_ascii_digit());
            if after_dot || literal || own.contains(&word.as_str()) {
                continue;
            }
            if ["meta", "hdr"].contains(&word.as_str())
                || KEYWORDS.contains(&word.as_str())
                || is_constant(&word)
            {
                continue;
            }
            names.push(word);
        }
        names.sort();
        names.dedup();
        for read in names {
            let Some(position) = control_params.iter().position(|p| *p == read) else {
                // A constructor parameter is a constant; anything else is a local.
                let constructor = text.contains(&format!("control {control}("))
                    && text[text.find(&format!("control {control}(")).unwrap()..]
                        .split('{')
                        .next()
                        .is_some_and(|head| head.contains(&format!(" {read})")));
                if !constructor {
                    bad.push(format!("line {line}: {name} reads the local {read}"));
                }
                continue;
            };
            // Every instance of the control, applied with a whole field (or constant) there.
            for (inst_at, _) in text.match_indices(&format!("{control}() ")) {
                let inst = text[inst_at + control.len() + 3..]
                    .split(';')
                    .next()
                    .unwrap()
                    .trim()
                    .to_string();
                for (call, m) in text.match_indices(&format!("{inst}.apply(")) {
                    let open = call + m.len() - 1;
                    let args = split_top(&text[open + 1..close_of(text, open) - 1], ",");
                    let arg = args.get(position).map(String::as_str).unwrap_or_default();
                    let whole = (arg.starts_with("meta.") || arg.starts_with("hdr."))
                        && is_whole_field(arg);
                    if !whole && !is_constant(arg) {
                        bad.push(format!(
                            "line {}: {inst}.apply passes {arg} as {read}, which {name} reads",
                            line_of(text, call)
                        ));
                    }
                }
            }
        }
    }
    bad.sort();
    bad.dedup();
    bad
}

#[test]
fn register_actions_read_only_whole_fields_in_both_builds() {
    for tiers in [false, true] {
        let bad = action_read_violations(&tna_program(tiers));
        assert!(bad.is_empty(), "tiers {tiers}: {bad:#?}");
    }
}

/// Issue 31's: a local addend, and a mask passed as a slice.
#[test]
fn planted_reads_of_copies_are_reported() {
    let text = "
    control P(inout value_h value, inout metadata_t meta) {
        bit<32> addend = 0;
        RegisterAction<bit<32>, bit<32>, bit<32>>(cells) add = {
            void apply(inout bit<32> held, out bit<32> sum) {
                held = held + addend;
                sum = held;
            }
        };
        apply { }
    }
    control W(in bit<32> mask, in bit<1> opened) {
        RegisterAction<bit<32>, bit<16>, bit<32>>(bits) set = {
            void apply(inout bit<32> value, out bit<32> rv) {
                rv = value;
                if (opened == 1) {
                    value = value | mask;
                }
            }
        };
        apply { }
    }
    control T(inout metadata_t meta) {
        W() lo;
        apply {
            lo.apply(meta.rank_bit[31:0], meta.run_opened);
        }
    }";
    let bad = action_read_violations(text);
    assert_eq!(bad.len(), 2, "{bad:#?}");
    assert!(bad.iter().any(|b| b.contains("add reads the local addend")));
    assert!(bad
        .iter()
        .any(|b| b.contains("passes meta.rank_bit[31:0] as mask")));
}
