//! Reading P4 text without a compiler, for `tofino_rules.rs` and `p4_files.rs`: the C
//! preprocessor's `#ifdef` branches, comments, balanced brackets, header sizes, struct fields, parser states and
//! the `if` statements of control bodies. Enough of P4_16 for this project's programs, not
//! a parser of the language: the checks that use it also run on small planted snippets.

use std::path::{Path, PathBuf};

/// The `p4/` directory.
pub fn p4_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What the C preprocessor leaves of `text` with the macros `defined`, which the file's own
/// `#define`s extend: the lines outside a dropped `#ifdef`/`#ifndef`/`#else` branch, without
/// those directives and `#define`; `#include` lines stay. Panics on an unbalanced branch.
pub fn preprocess(text: &str, defined: &mut Vec<String>) -> String {
    let mut out = String::new();
    let mut open: Vec<bool> = Vec::new();
    let mut parents: Vec<bool> = Vec::new();
    for line in text.lines() {
        let active = open.last().copied().unwrap_or(true);
        let directive = line.trim_start();
        let name = |d: &str| d.split_whitespace().nth(1).unwrap_or_default().to_string();
        if directive.starts_with("#ifdef ") || directive.starts_with("#ifndef ") {
            let is_defined = defined.contains(&name(directive));
            parents.push(active);
            open.push(active && (is_defined == directive.starts_with("#ifdef ")));
        } else if directive.starts_with("#else") {
            let taken = open.pop().expect("#else without #if");
            open.push(*parents.last().unwrap() && !taken);
        } else if directive.starts_with("#endif") {
            open.pop().expect("#endif without #if");
            parents.pop();
        } else if directive.starts_with("#if ") || directive.starts_with("#elif") {
            panic!("preprocess knows only #ifdef/#ifndef/#else/#endif: {line}");
        } else if active && directive.starts_with("#define ") {
            defined.push(name(directive));
        } else if active {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(open.is_empty(), "an #ifdef without #endif");
    out
}

/// The whole program `p4/tna/switchml.p4` as p4c sees it, with `SWITCHML_TIERS` defined or
/// not: every `#include "…"` inlined where it stands, comments removed, and the `#define`d
/// numbers replaced (`VALUES_PER_PASS` and the like).
pub fn tna_program(tiers: bool) -> String {
    fn inline(path: &Path, defined: &mut Vec<String>, out: &mut String) {
        let text = std::fs::read_to_string(path).unwrap();
        for line in preprocess(&text, defined).lines() {
            match line.trim().strip_prefix("#include \"") {
                Some(name) => {
                    let name = name.trim_end_matches('"');
                    inline(&path.parent().unwrap().join(name), defined, out);
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    let mut defined = if tiers {
        vec!["SWITCHML_TIERS".to_string()]
    } else {
        vec![]
    };
    let mut out = String::new();
    inline(&p4_dir().join("tna/switchml.p4"), &mut defined, &mut out);
    let mut text = strip_comments(&out);
    for (name, value) in defines(&p4_dir().join("include/constants.p4")) {
        text = replace_word(&text, &name, &value);
    }
    text
}

/// The `#define NAME number` lines of a file.
fn defines(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("#define "))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (name, value) = (words.next()?, words.next()?);
            value
                .parse::<u64>()
                .is_ok()
                .then(|| (name.to_string(), value.to_string()))
        })
        .collect()
}

/// `text` with every whole-word `name` replaced by `value`.
fn replace_word(text: &str, name: &str, value: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(name) {
        let before = rest[..at].chars().last();
        let after = rest[at + name.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        out.push_str(if word(before) || word(after) {
            name
        } else {
            value
        });
        rest = &rest[at + name.len()..];
    }
    out.push_str(rest);
    out
}

/// `text` without `//` comments.
pub fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The index just past the bracket that closes the one at `open` (`(`, `{` or `[`).
pub fn close_of(text: &str, open: usize) -> usize {
    let bytes = text.as_bytes();
    let (o, c) = match bytes[open] {
        b'(' => (b'(', b')'),
        b'{' => (b'{', b'}'),
        b'[' => (b'[', b']'),
        other => panic!("no bracket at {open}: {}", other as char),
    };
    let mut depth = 0;
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        if b == o {
            depth += 1;
        } else if b == c {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
    }
    panic!("unbalanced bracket at {open}");
}

/// The body (between the braces) of the block that follows `start` in `text`.
pub fn body_after(text: &str, start: usize) -> &str {
    let open = start + text[start..].find('{').expect("a block");
    &text[open + 1..close_of(text, open) - 1]
}

/// The line number (from 1) of byte `at`.
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Every `header NAME { … }` of `text`, with its size in bits.
pub fn header_bits(text: &str) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("header ") {
        let rest = &text[at + 7..];
        let Some(name) = rest.split_whitespace().next() else {
            continue;
        };
        if !rest.trim_start()[name.len()..]
            .trim_start()
            .starts_with('{')
        {
            continue;
        }
        let bits = body_after(text, at)
            .split(';')
            .filter_map(|f| {
                let f = f.trim();
                let width = f.strip_prefix("bit<")?.split('>').next()?;
                width.trim().parse::<u32>().ok()
            })
            .sum();
        out.push((name.to_string(), bits));
    }
    out
}

/// The fields of `struct name { … }` in `text`: (type, field name).
pub fn struct_fields(text: &str, name: &str) -> Vec<(String, String)> {
    let at = text
        .find(&format!("struct {name} {{"))
        .unwrap_or_else(|| panic!("no struct {name}"));
    body_after(text, at)
        .split(';')
        .filter_map(|f| {
            let words: Vec<&str> = f.split_whitespace().collect();
            match words.as_slice() {
                [.., ty, field] => Some((ty.to_string(), field.to_string())),
                _ => None,
            }
        })
        .collect()
}

/// One parser state: what it takes from the packet, in bits, and where it can go next.
#[derive(Debug)]
pub struct State {
    /// The state's name.
    pub name: String,
    /// Its statements' text.
    pub body: String,
    /// The states it can go to (`accept` and `reject` included).
    pub next: Vec<String>,
}

/// The states of `parser name(…) { … }` in `text`.
pub fn parser_states(text: &str, name: &str) -> Vec<State> {
    let at = text
        .find(&format!("parser {name}("))
        .unwrap_or_else(|| panic!("no parser {name}"));
    let params_end = close_of(text, at + text[at..].find('(').unwrap());
    let body = body_after(text, params_end);
    let mut states = Vec::new();
    for (at, _) in body.match_indices("state ") {
        let before = body[..at].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name = body[at + 6..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        let state = body_after(body, at).to_string();
        let transition = state.find("transition").map(|t| &state[t + 10..]);
        let next = match transition {
            Some(t) if t.trim_start().starts_with("select") => {
                let open = t.find('{').expect("select cases");
                t[open + 1..close_of(t, open) - 1]
                    .split(';')
                    .filter_map(|case| case.rsplit(':').next())
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            }
            Some(t) => vec![t.trim().trim_end_matches(';').trim().to_string()],
            None => vec![],
        };
        states.push(State {
            name,
            body: state,
            next,
        });
    }
    states
}

/// An `if` of a control body: its condition, its then-branch's statements, and its else
/// branch (an `else if` is an else-branch of one `if`).
#[derive(Debug)]
pub struct If {
    /// The condition, whitespace collapsed.
    pub cond: String,
    /// The line of the `if`.
    pub line: usize,
    /// The then-branch.
    pub then: Vec<Stmt>,
    /// The else-branch, if any.
    pub els: Option<Vec<Stmt>>,
}

/// A statement of a control body, as far as the gateway rule cares.
#[derive(Debug)]
pub enum Stmt {
    /// An `if`.
    If(If),
    /// A nested block.
    Block(Vec<Stmt>),
    /// Anything else.
    Other,
}

/// The statements of the block whose `{` is at `open` in `text`.
pub fn statements(text: &str, open: usize) -> Vec<Stmt> {
    let end = close_of(text, open) - 1;
    let mut i = open + 1;
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    while i < end {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
        } else if text[i..].starts_with("if (") || text[i..].starts_with("if(") {
            let (stmt, next) = parse_if(text, i);
            out.push(Stmt::If(stmt));
            i = next;
        } else if bytes[i] == b'{' {
            out.push(Stmt::Block(statements(text, i)));
            i = close_of(text, i);
        } else {
            // To the `;` that ends it, or past a block it opens (a switch, an action body).
            let stop = text[i..end].find([';', '{']).map_or(end, |s| i + s);
            i = if stop < end && bytes[stop] == b'{' {
                close_of(text, stop)
            } else {
                stop + 1
            };
            out.push(Stmt::Other);
        }
    }
    out
}

fn parse_if(text: &str, at: usize) -> (If, usize) {
    let open = at + text[at..].find('(').unwrap();
    let close = close_of(text, open);
    let cond = text[open + 1..close - 1]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let brace = close + text[close..].find('{').expect("if without a block");
    let then = statements(text, brace);
    let mut next = close_of(text, brace);
    let rest = text[next..].trim_start();
    let mut els = None;
    if let Some(after) = rest.strip_prefix("else") {
        let skipped = text[next..].len() - after.len();
        let start = next + skipped + (after.len() - after.trim_start().len());
        if text[start..].starts_with("if") {
            let (stmt, end) = parse_if(text, start);
            els = Some(vec![Stmt::If(stmt)]);
            next = end;
        } else {
            els = Some(statements(text, start));
            next = close_of(text, start);
        }
    }
    let stmt = If {
        cond,
        line: line_of(text, at),
        then,
        els,
    };
    (stmt, next)
}

/// The top-level parts of `cond` split at `sep` (`||` or `&&`), brackets respected; one
/// pair of brackets around the whole is removed first.
pub fn split_top(cond: &str, sep: &str) -> Vec<String> {
    let mut cond = cond.trim();
    while cond.starts_with('(') && close_of(cond, 0) == cond.len() {
        cond = cond[1..cond.len() - 1].trim();
    }
    let mut parts = Vec::new();
    let (mut depth, mut last) = (0i32, 0);
    let bytes = cond.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ if depth == 0 && cond[i..].starts_with(sep) => {
                parts.push(cond[last..i].trim().to_string());
                last = i + sep.len();
                i += sep.len();
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(cond[last..].trim().to_string());
    parts
}

/// Every `RegisterAction<…>(register) name = { void apply(…) { … } };` of `text`:
/// (register, action name, apply's parameters, body, line).
pub fn register_actions(text: &str) -> Vec<(String, String, String, String, usize)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("RegisterAction<") {
        let open = at + text[at..].find('(').unwrap();
        let close = close_of(text, open);
        let register = text[open + 1..close - 1].trim().to_string();
        let name = text[close..].split('=').next().unwrap().trim().to_string();
        let apply = close + text[close..].find("void apply").unwrap();
        let params_open = apply + text[apply..].find('(').unwrap();
        let params_close = close_of(text, params_open);
        let params = text[params_open + 1..params_close - 1].to_string();
        let body = body_after(text, params_close).to_string();
        out.push((register, name, params, body, line_of(text, at)));
    }
    out
}

/// Whether `arg` is a constant: a literal (`8w127`, `0x7F`, `12`), an upper-case name, or
/// those joined by `+`, `-` and brackets.
pub fn is_constant(arg: &str) -> bool {
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
pub fn value_of(arg: &str) -> Option<i64> {
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
pub fn is_whole_field(arg: &str) -> bool {
    let arg = arg.trim();
    arg.contains('.')
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}
