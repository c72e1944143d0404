//! Gateways: no `!=` negated inside a longer gateway row (bf-p4c `CanonGatewayExpr`).

use crate::p4text::{close_of, line_of, split_top, statements, tna_program, If, Stmt};
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
