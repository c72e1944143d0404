//! Parser counters: loaded only in the forms bf-p4c lowers, with at most 127.

use crate::p4text::{
    close_of, is_constant, is_whole_field, line_of, split_top, tna_program, value_of,
};
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
