//! The Tofino 1 rules that stopped bf-p4c 9.13.4 on the TNA program (issue 31), checked on
//! the program's text without the compiler, in both builds (flat, and `-DSWITCHML_TIERS`):
//!
//! - the egress parser's longest path, intrinsic metadata included, is at most 160 bytes
//!   (bf-p4c's `ParserEnforceDepthReq`: the sum of what each state extracts or skips);
//! - a `ParserCounter` is loaded only in a form bf-p4c lowers (`set` of a constant, of a
//!   whole header field, or of a whole field with constant max, rotate, mask and add), with
//!   at most 127 (the counter is 8 bits, signed);
//! - a `RegisterAction` compares at most twice (a Tofino 1 stateful ALU has two comparison
//!   units), masks in a comparison only with a constant, gives its output from one source
//!   (besides 0), and a register has at most four of them;
//! - a gateway (an `if` of a control) negates no `!=` inside a longer row: bf-p4c merges an
//!   `if` whose then-branch is one `if` into one gateway, splits `||` into rows, and turns a
//!   row `X && a != c` into `X && a == c` followed by copies of the rows below it, giving up
//!   ("gateway condition too complex") after two rounds. The rule is conservative: a `!=`
//!   stands alone in its row, or its row is the gateway's last;
//! - every field of `metadata_t` is written by the ingress parser's start state before any
//!   control reads it (Tofino does not zero metadata), and read there only after its write.
//!
//! Each rule also runs on a small planted violation, which it must report. The figures the
//! compiler prints (stages, SRAM, PHV) replace none of this; they need it to compile first.

mod p4text;

use p4text::{
    close_of, header_bits, line_of, parser_states, register_actions, split_top, statements,
    struct_fields, tna_program, If, Stmt,
};

/// Tofino 1's limit on an egress parser's longest path, in bytes.
const EGRESS_PARSE_DEPTH: u32 = 160;
/// `egress_intrinsic_metadata_t` of Tofino 1's `tna.p4`, in bytes (the first extract).
const EGRESS_INTRINSIC_BYTES: u32 = 27;
/// Comparison units of a Tofino 1 stateful ALU.
const SALU_COMPARISONS: usize = 2;
/// RegisterActions one register (one stateful ALU) holds.
const ACTIONS_PER_REGISTER: usize = 4;

// ---------------------------------------------------------------------------------------
// Egress parse depth.

/// The longest path of parser `parser` in bytes, and the path; `headers` is the struct its
/// `hdr` is. An error names a loop or an extract of unknown size.
fn longest_parse(text: &str, parser: &str, headers: &str) -> Result<(u32, Vec<String>), String> {
    let sizes = header_bits(text);
    let fields = struct_fields(text, headers);
    let states = parser_states(text, parser);
    let bits_of = |state: &p4text::State| -> Result<u32, String> {
        let mut bits = 0;
        for (at, _) in state.body.match_indices("packet.extract(") {
            let open = at + "packet.extract".len();
            let arg = &state.body[open + 1..close_of(&state.body, open) - 1];
            let arg = arg.trim().trim_end_matches(".next");
            bits += if arg == "eg_intr_md" {
                EGRESS_INTRINSIC_BYTES * 8
            } else {
                let field = arg.strip_prefix("hdr.").ok_or(format!("extract({arg})"))?;
                let (ty, _) = fields
                    .iter()
                    .find(|(_, f)| f.split('[').next() == Some(field))
                    .ok_or(format!("{headers} has no {field}"))?;
                let ty = ty.split('[').next().unwrap();
                sizes
                    .iter()
                    .find(|(h, _)| h == ty)
                    .map(|&(_, b)| b)
                    .ok_or(format!("no header {ty}"))?
            };
        }
        for (at, _) in state.body.match_indices("packet.advance(") {
            let open = at + "packet.advance".len();
            let arg = &state.body[open + 1..close_of(&state.body, open) - 1];
            bits += arg
                .trim()
                .parse::<u32>()
                .map_err(|_| format!("advance({arg})"))?;
        }
        Ok(bits)
    };
    fn walk(
        states: &[p4text::State],
        bits_of: &dyn Fn(&p4text::State) -> Result<u32, String>,
        name: &str,
        path: &mut Vec<String>,
    ) -> Result<(u32, Vec<String>), String> {
        if name == "accept" || name == "reject" {
            return Ok((0, path.clone()));
        }
        if path.iter().any(|p| p == name) {
            return Err(format!("a loop through {name}: {path:?}"));
        }
        let state = states
            .iter()
            .find(|s| s.name == name)
            .ok_or(format!("no state {name}"))?;
        let bits = bits_of(state)?;
        path.push(name.to_string());
        let mut best = (0, path.clone());
        for next in &state.next {
            let (b, p) = walk(states, bits_of, next, path)?;
            if b > best.0 {
                best = (b, p);
            }
        }
        path.pop();
        Ok((bits + best.0, best.1))
    }
    let (bits, path) = walk(&states, &bits_of, "start", &mut Vec::new())?;
    Ok((bits.div_ceil(8), path))
}

#[test]
fn every_egress_parse_path_fits_160_bytes_in_both_builds() {
    for tiers in [false, true] {
        let text = tna_program(tiers);
        let (bytes, path) =
            longest_parse(&text, "SwitchmlEgressParser", "egress_headers_t").unwrap();
        assert!(
            bytes <= EGRESS_PARSE_DEPTH,
            "tiers {tiers}: {bytes} B along {path:?}"
        );
        // What the README states (p4/README.md, Resources; tna/parser.p4).
        assert_eq!(
            bytes,
            if tiers { 148 } else { 120 },
            "tiers {tiers}: {path:?}"
        );
    }
}

/// The egress parser of issue 31's flat build: a recirculating packet's 48-byte bridge was
/// parsed, 168 bytes in all.
#[test]
fn a_planted_egress_path_of_168_bytes_is_reported() {
    let text = "
        header eb_h { bit<128> a; bit<88> b; }
        header br_h { bit<384> a; }
        header eth_h { bit<112> a; }
        header ip_h { bit<160> a; }
        header rest_h { bit<256> a; }
        struct eh_t { eb_h egress_bridge; br_h bridge; eth_h ethernet; ip_h ipv4; rest_h rest; }
        parser P(packet_in packet, out eh_t hdr, out egress_intrinsic_metadata_t eg_intr_md) {
            state start { packet.extract(eg_intr_md); transition parse_egress_bridge; }
            state parse_egress_bridge {
                packet.extract(hdr.egress_bridge);
                transition select(hdr.egress_bridge.b) { 1: parse_bridge; default: parse_eth; }
            }
            state parse_bridge { packet.extract(hdr.bridge); transition parse_eth; }
            state parse_eth {
                packet.extract(hdr.ethernet);
                packet.extract(hdr.ipv4);
                packet.extract(hdr.rest);
                transition accept;
            }
        }";
    let (bytes, path) = longest_parse(text, "P", "eh_t").unwrap();
    assert_eq!(bytes, 168);
    assert!(path.contains(&"parse_bridge".to_string()));
    assert!(bytes > EGRESS_PARSE_DEPTH);
}

// ---------------------------------------------------------------------------------------
// Parser counters.

/// Whether `arg` is a constant: a literal (`8w127`, `0x7F`, `12`), an upper-case name, or
/// those joined by `+`, `-` and brackets.
fn is_constant(arg: &str) -> bool {
    // A cast of a constant folds to a constant.
    let arg = arg.trim();
    let arg = match arg.strip_prefix("(bit<") {
        Some(rest) => rest.split_once(">)").map_or(arg, |(_, v)| v),
        None => arg,
    };
    !arg.is_empty()
        && arg.split(['+', '-', '(', ')', ' ']).all(|w| {
            w.is_empty()
                || w.chars().next().is_some_and(|c| c.is_ascii_digit())
                    && w.chars().all(|c| c.is_ascii_alphanumeric())
                || w.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
}

/// The value of a constant made of decimal literals, `+` and `-`; None otherwise.
fn value_of(arg: &str) -> Option<i64> {
    let arg = arg.trim().trim_start_matches('(').trim_end_matches(')');
    let mut total = 0i64;
    let mut sign = 1;
    for word in arg.split_inclusive(['+', '-']) {
        let (num, op) = match word.chars().last() {
            Some(c @ ('+' | '-')) => (&word[..word.len() - 1], Some(c)),
            _ => (word, None),
        };
        let num = num.trim();
        let num = num.split_once('w').map_or(num, |(_, v)| v);
        total += sign * num.parse::<i64>().ok()?;
        sign = if op == Some('-') { -1 } else { 1 };
    }
    Some(total)
}

/// Whether `arg` is one whole field: `a.b` or `a.b.c`, no slice, cast or operator.
fn is_whole_field(arg: &str) -> bool {
    let arg = arg.trim();
    arg.contains('.')
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// The loads of every `ParserCounter` of `text` that bf-p4c would not take.
fn counter_violations(text: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let names: Vec<String> = text
        .match_indices("ParserCounter() ")
        .map(|(at, _)| {
            let rest = &text[at + 16..];
            rest[..rest.find(';').unwrap()].trim().to_string()
        })
        .collect();
    for name in &names {
        for (at, _) in text.match_indices(&format!("{name}.set(")) {
            let open = at + name.len() + 4;
            let args = split_top(&text[open + 1..close_of(text, open) - 1], ",");
            let line = line_of(text, at);
            let ok = match args.as_slice() {
                [one] if is_constant(one) => value_of(one).is_none_or(|v| (0..=127).contains(&v)),
                [one] => is_whole_field(one),
                [field, max, rotate, mask, add] => {
                    is_whole_field(field)
                        && [max, rotate, mask, add].iter().all(|a| is_constant(a))
                        && value_of(max).is_none_or(|v| v <= 127)
                }
                _ => false,
            };
            if !ok {
                bad.push(format!("line {line}: {name}.set({})", args.join(", ")));
            }
        }
        for op in ["decrement", "increment"] {
            for (at, _) in text.match_indices(&format!("{name}.{op}(")) {
                let open = at + name.len() + op.len() + 1;
                let arg = &text[open + 1..close_of(text, open) - 1];
                if !is_constant(arg) {
                    bad.push(format!("line {}: {name}.{op}({arg})", line_of(text, at)));
                }
            }
        }
    }
    bad
}

#[test]
fn parser_counters_are_loaded_only_in_forms_bf_p4c_takes() {
    for tiers in [false, true] {
        let bad = counter_violations(&tna_program(tiers));
        assert!(bad.is_empty(), "tiers {tiers}: {bad:#?}");
    }
    // The flat build counts its values by states, not with a counter.
    assert!(!tna_program(false).contains("ParserCounter()"));
}

#[test]
fn planted_counter_loads_are_reported() {
    let text = "
        ParserCounter() values_left;
        state a { values_left.set(hdr.data.count[7:0]); transition b; }
        state b { values_left.set(8w128); transition c; }
        state c { values_left.set(hdr.x.n, 200, 0, 7, 0); transition d; }
        state d { values_left.set(hdr.x.n + 1); values_left.decrement(meta.k); transition e; }
        state e { values_left.set(hdr.x.n); values_left.set((bit<8>)16); transition accept; }";
    let bad = counter_violations(text);
    assert_eq!(bad.len(), 5, "{bad:#?}");
    assert!(bad[0].contains("count[7:0]"));
}

// ---------------------------------------------------------------------------------------
// Stateful ALUs.

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
            actions >= if tiers { 46 } else { 35 },
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

// ---------------------------------------------------------------------------------------
// Gateways.

/// The gateway rows of `stmts` that negate a `!=` inside a longer row ahead of other rows.
fn gateway_violations_in(
    stmts: &[Stmt],
    merged: &[String],
    more_rows: bool,
    bad: &mut Vec<String>,
) {
    for stmt in stmts {
        match stmt {
            Stmt::Block(inner) => gateway_violations_in(inner, &[], false, bad),
            Stmt::Other => {}
            Stmt::If(If {
                cond,
                line,
                then,
                els,
            }) => {
                let more = els.is_some() || more_rows;
                let rows = split_top(cond, "||");
                for (n, row) in rows.iter().enumerate() {
                    let terms = split_top(row, "&&").len() + merged.len();
                    let negates = row.contains("!=") || merged.iter().any(|m| m.contains("!="));
                    let last = n + 1 == rows.len() && !more;
                    if negates && terms >= 2 && !last {
                        bad.push(format!("line {line}: {cond}"));
                        break;
                    }
                }
                // An `if` whose then-branch is one `if` is one gateway with it.
                if let [Stmt::If(_)] = then.as_slice() {
                    let mut with = merged.to_vec();
                    with.push(cond.clone());
                    gateway_violations_in(then, &with, more, bad);
                } else {
                    gateway_violations_in(then, &[], false, bad);
                }
                if let Some(els) = els {
                    gateway_violations_in(els, &[], false, bad);
                }
            }
        }
    }
}

/// The gateway rows of every control's `apply` block in `text` that break the rule.
fn gateway_violations(text: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for (at, _) in text.match_indices("control ") {
        let open = at + text[at..].find('(').unwrap();
        let body_open = close_of(text, open) + text[close_of(text, open)..].find('{').unwrap();
        let body = &text[body_open..close_of(text, body_open)];
        let Some(apply) = body
            .match_indices("apply {")
            .map(|(a, _)| a)
            .find(|&a| !body[..a].trim_end().ends_with("void"))
        else {
            continue;
        };
        let stmts = statements(body, apply + "apply ".len());
        let mut found = Vec::new();
        gateway_violations_in(&stmts, &[], false, &mut found);
        let first = line_of(text, body_open);
        bad.extend(found.into_iter().map(|f| {
            let (line, rest) = f.trim_start_matches("line ").split_once(':').unwrap();
            format!("line {}:{rest}", first + line.parse::<usize>().unwrap() - 1)
        }));
    }
    bad
}

#[test]
fn no_gateway_negates_a_not_equal_inside_a_longer_row_in_either_build() {
    for tiers in [false, true] {
        let text = tna_program(tiers);
        let bad = gateway_violations(&text);
        assert!(bad.is_empty(), "tiers {tiers}: {bad:#?}");
        assert!(text.matches("if (").count() > 300, "tiers {tiers}");
    }
}

/// Issue 31's three: the run tracker's gate in `switchml.p4`, the validator's Join row (an
/// `if` alone in its branch of the chain) and the run tracker's session check.
#[test]
fn planted_gateways_are_reported() {
    let text = "
    control A(inout metadata_t meta) {
        apply {
            if ((meta.recirculated == 0 && meta.message != MSG_NONE && meta.job_hit == 1)
                    || (meta.recirculated == 1 && meta.message != MSG_RESULT)) {
                run_tracker.apply(hdr, meta);
            }
            if (hdr.data.isValid()) {
                meta.message = 1;
            } else if (hdr.join.isValid()) {
                if (udp_len == 36 && hdr.join.lanes != 0 && hdr.join.nonce != 0) {
                    meta.message = 2;
                } else {
                    meta.drop_reason = 0;
                }
            } else if (hdr.probe.isValid()) {
                meta.message = 3;
            }
            if (meta.admitted == 0) {
                if (meta.message != MSG_PROBE) {
                    meta.drop_reason = DROP_BAD_SESSION;
                }
            } else if (meta.message == MSG_ABORT) {
                meta.drop_reason = 4;
            }
            if (meta.drop_reason != DROP_NONE) {
                meta.verdict = 0;
            } else if (meta.run_end == 1 && meta.x == 2) {
                meta.verdict = 4;
            }
        }
    }";
    let bad = gateway_violations(text);
    assert_eq!(bad.len(), 3, "{bad:#?}");
    assert!(bad[0].starts_with("line 4:"), "{bad:#?}");
    assert!(bad[1].contains("hdr.join.lanes != 0"), "{bad:#?}");
    assert!(bad[2].contains("meta.message != MSG_PROBE"), "{bad:#?}");
}

// ---------------------------------------------------------------------------------------
// Metadata written first.

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
// Unused constants (p4test's `-Wunused`, issue 31).

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
