//! Stateful ALUs: what one Tofino 1 stateful ALU can run per RegisterAction.

use crate::p4text::{close_of, is_constant, register_actions, split_top, tna_program, value_of};

/// Comparison units of a Tofino 1 stateful ALU.
const SALU_COMPARISONS: usize = 2;
/// RegisterActions one register (one stateful ALU) holds.
const ACTIONS_PER_REGISTER: usize = 4;

/// The comparisons of a condition: its `&&`/`||` terms that compare.
fn comparisons(cond: &str) -> Vec<String> {
    let mut out = Vec::new();
    for any in split_top(cond, "||") {
        for term in split_top(&any, "&&") {
            if term.contains("||") || term.contains("&&") {
                out.extend(comparisons(&term));
                continue;
            }
            let cmp = ["==", "!=", "<=", ">="].iter().any(|op| term.contains(op))
                || term
                    .replace("<<", "")
                    .replace(">>", "")
                    .contains(['<', '>'])
                    && !term.contains("bit<")
                    && !term.contains("int<");
            let cmp = cmp || term.contains("int<") && term.contains(") >");
            if cmp {
                out.push(term.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        }
    }
    out
}

/// The conditions in an action body: every `if (…)`.
fn conditions(body: &str) -> Vec<String> {
    body.match_indices("if (")
        .map(|(at, _)| body[at + 4..close_of(body, at + 3) - 1].to_string())
        .collect()
}

/// Whether a comparison masks with something that is not a constant.
fn masks_with_a_field(term: &str) -> bool {
    let bytes = term.as_bytes();
    (0..bytes.len()).any(|i| {
        bytes[i] == b'&' && bytes.get(i + 1) != Some(&b'&') && (i == 0 || bytes[i - 1] != b'&') && {
            let after = term[i + 1..].trim_start();
            let operand: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            !is_constant(&operand)
        }
    })
}

/// The RegisterActions of `text` that one Tofino 1 stateful ALU cannot run.
fn salu_violations(text: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let actions = register_actions(text);
    for (register, name, params, body, line) in &actions {
        let mut cmps: Vec<String> = conditions(body)
            .iter()
            .flat_map(|c| comparisons(c))
            .collect();
        cmps.sort();
        cmps.dedup();
        if cmps.len() > SALU_COMPARISONS {
            bad.push(format!(
                "line {line}: {name}: {} comparisons {cmps:?}",
                cmps.len()
            ));
        }
        for term in cmps.iter().filter(|t| masks_with_a_field(t)) {
            bad.push(format!(
                "line {line}: {name}: mask operand not constant: {term}"
            ));
        }
        // The output: one source besides 0.
        let Some(out) = params
            .split(',')
            .nth(1)
            .and_then(|p| p.split_whitespace().last())
        else {
            continue;
        };
        let mut sources: Vec<(usize, String)> = body
            .match_indices(&format!("{out} = "))
            .filter(|(at, _)| {
                !body[..*at]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
            })
            .map(|(at, m)| {
                let rhs = &body[at + m.len()..];
                (at, rhs[..rhs.find(';').unwrap()].trim().to_string())
            })
            .filter(|(_, rhs)| value_of(rhs) != Some(0))
            .collect();
        sources.dedup_by(|a, b| a.1 == b.1);
        let distinct: std::collections::BTreeSet<&String> = sources.iter().map(|s| &s.1).collect();
        if distinct.len() > 1 {
            bad.push(format!("line {line}: {name}: outputs {distinct:?}"));
        }
        // A register word read out after a conditional write of it, outside the write's
        // branch, is two sources (the memory and the ALU).
        let value = params
            .split(',')
            .next()
            .and_then(|p| p.split_whitespace().last());
        let depth = |at: usize| body[..at].matches('{').count() - body[..at].matches('}').count();
        for (at, rhs) in &sources {
            let is_word = value.is_some_and(|v| rhs == v || rhs.starts_with(&format!("{v}.")));
            let written_before = body[..*at]
                .match_indices(&format!("{rhs} = "))
                .any(|(w, _)| depth(w) > depth(*at));
            if is_word && written_before {
                bad.push(format!(
                    "line {line}: {name}: outputs {rhs} after a conditional write"
                ));
            }
        }
        let of_register = actions.iter().filter(|a| &a.0 == register).count();
        if of_register > ACTIONS_PER_REGISTER {
            bad.push(format!("{register}: {of_register} RegisterActions"));
        }
    }
    bad.sort();
    bad.dedup();
    bad
}

#[test]
fn every_register_action_fits_one_stateful_alu_in_both_builds() {
    for tiers in [false, true] {
        let text = tna_program(tiers);
        let bad = salu_violations(&text);
        assert!(bad.is_empty(), "tiers {tiers}: {bad:#?}");
        let actions = register_actions(&text).len();
        assert!(
            actions >= if tiers { 48 } else { 35 },
            "tiers {tiers}: {actions}"
        );
    }
}

/// Issue 31's rejected actions, as they were: the use check's three comparisons, the seen
/// word's four and its mask, and `agree`'s two outputs.
#[test]
fn planted_register_actions_are_reported() {
    let text = "
    RegisterAction<bit<32>, bit<32>, bit<8>>(seq) check_use = {
        void apply(inout bit<32> value, out bit<8> use) {
            if (meta.in_session == 0 || (int<32>)(meta.p_seq - value) > 0) {
                value = meta.p_seq;
                use = USE_BEGIN;
            } else if (value == meta.p_seq) {
                use = USE_CURRENT;
            } else {
                use = USE_STALE;
            }
        }
    };
    RegisterAction<seen_pair_t, bit<32>, bit<8>>(seen) check_v0 = {
        void apply(inout seen_pair_t w, out bit<8> f) {
            if (meta.begin == 1) {
                w.v0 = 0;
            }
            f = 0;
            if ((w.v0 & mask) != 0) {
                f = 1;
            } else if (meta.count_ok == 1 && mask != 0) {
                w.v0 = w.v0 | mask;
            }
        }
    };
    RegisterAction<shape_cell_t, bit<16>, bit<32>>(shape) agree = {
        void apply(inout shape_cell_t value, out bit<32> read) {
            if (meta.run_opened == 1) {
                read = value.runs;
                value.runs = value.runs + 1;
            } else {
                read = value.shape;
            }
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(lanes) agree_lanes = {
        void apply(inout bit<16> value, out bit<16> read) {
            if (meta.run_opened == 1) {
                value = hdr.join.lanes;
            }
            read = value;
        }
    };";
    let bad = salu_violations(text);
    let has = |what: &str| bad.iter().any(|b| b.contains(what));
    assert!(has("check_use: 3 comparisons"), "{bad:#?}");
    assert!(has("check_use: outputs"), "{bad:#?}");
    assert!(has("check_v0: 4 comparisons"), "{bad:#?}");
    assert!(
        has("check_v0: mask operand not constant: (w.v0 & mask) != 0"),
        "{bad:#?}"
    );
    assert!(has("agree: outputs"), "{bad:#?}");
    assert!(
        has("agree_lanes: outputs value after a conditional write"),
        "{bad:#?}"
    );
    let five: String = (0..5)
        .map(|i| {
            format!(
                "RegisterAction<bit<8>, bit<32>, bit<8>>(r) a{i} = {{ \
                 void apply(inout bit<8> value, out bit<8> o) {{ o = value; }} }};\n"
            )
        })
        .collect();
    assert!(salu_violations(&five)
        .iter()
        .any(|b| b.contains("r: 5 RegisterActions")));
}
