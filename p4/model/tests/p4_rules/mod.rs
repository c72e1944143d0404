//! Rules the P4 compilers and BMv2 enforce, checked on the programs' text because the
//! project cannot run them (issue 31). Each rule is one function from program text to the
//! violations it finds (empty: the text keeps the rule), so that `p4_files.rs` can run it on
//! the programs and on a planted violation alike:
//!
//! - [`runtime_divisions`]: p4c's BMv2 back end evaluates `%` and `/` only on compile-time
//!   constants ("could not evaluate expression at compilation time"); Tofino has no divider.
//! - [`stack_index_selects`]: BMv2 takes only fields, stack fields and lookahead as parser
//!   select keys, not `lastIndex` ("Invalid entry in parse state key").
//! - [`repeated_applications`]: a control instance or table applied from two places makes
//!   p4c copy metadata under names BMv2 cannot find, and a Tofino stage runs a register once
//!   per pass.
//! - [`unpreserved_recirculation_reads`]: BMv2 zeroes every metadata field a recirculation
//!   does not preserve, standard metadata included: what a later pass reads must be in the
//!   field list `recirculate_preserving_field_list` names ("a multi-pass unicast answer
//!   leaves on port 0").
//!
//! - [`admission`]: issue 25's rules (protocol.md §4.2): no key in either program, a Join
//!   or Status handled by the pipeline only from the CPU port, the ProbeReply's session.
//!
//! The text is read as p4c's preprocessor leaves it; comments and string literals are
//! blanked first ([`code`]), so a rule never fires on prose.

/// `text` with comments and string literals replaced by spaces, lines kept.
pub fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut line_comment, mut block_comment, mut string) = (false, false, false);
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let blank = if line_comment {
            line_comment = c != '\n';
            true
        } else if block_comment {
            if c == '*' && next == Some('/') {
                chars.next();
                out.push(' ');
                block_comment = false;
            }
            true
        } else if string {
            string = c != '"';
            true
        } else if c == '/' && next == Some('/') {
            line_comment = true;
            true
        } else if c == '/' && next == Some('*') {
            block_comment = true;
            true
        } else {
            string = c == '"';
            string
        };
        out.push(if blank && c != '\n' { ' ' } else { c });
    }
    out
}

/// The line number (from 1) of byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `atom` is a compile-time constant as the programs write them: a number
/// (`16`, `0xFF`, `8w3`) or an all-capitals name (a `const` or a `#define`).
fn is_constant(atom: &str) -> bool {
    let atom = atom.trim();
    !atom.is_empty()
        && atom.chars().all(is_word)
        && (atom.starts_with(|c: char| c.is_ascii_digit())
            || atom.chars().all(|c| !c.is_ascii_lowercase()))
}

/// Whether every name in the parenthesised `group` is constant (casts' types aside).
fn group_is_constant(group: &str) -> bool {
    let mut words = group.split(|c: char| !is_word(c) && c != '.');
    words.all(|w| w.is_empty() || w == "bit" || w == "int" || is_constant(w))
}

/// The operand left of byte `at` of `text` (the operator's position).
fn left_operand(text: &str, at: usize) -> &str {
    let before = text[..at].trim_end();
    if before.ends_with(')') {
        let mut depth = 0;
        for (i, c) in before.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                return &before[i..];
            }
        }
        return before;
    }
    let start = before
        .rfind(|c: char| !(is_word(c) || c == '.' || c == '[' || c == ']'))
        .map_or(0, |i| i + 1);
    &before[start..]
}

/// The operand right of byte `at` (the operator's position): a parenthesised group, or a
/// cast and the operand after it, or a name or number.
fn right_operand(text: &str, at: usize) -> &str {
    let after = &text[at + 1..];
    let trimmed = after.trim_start();
    let offset = after.len() - trimmed.len();
    let mut end = 0;
    let bytes: Vec<char> = trimmed.chars().collect();
    let mut depth = 0;
    while end < bytes.len() {
        let c = bytes[end];
        if c == '(' {
            depth += 1;
        } else if c == ')' {
            if depth == 0 {
                break;
            }
            depth -= 1;
        } else if depth == 0 && !(is_word(c) || c == '.' || c == '[' || c == ']') {
            break;
        }
        end += 1;
    }
    let end: usize = bytes[..end].iter().map(|c| c.len_utf8()).sum();
    &after[offset..offset + end]
}

/// Every `%` or `/` with an operand that is not a compile-time constant, as `line: expr`.
pub fn runtime_divisions(text: &str) -> Vec<String> {
    let text = code(text);
    let mut found = Vec::new();
    for (at, c) in text.char_indices() {
        if c != '%' && c != '/' {
            continue;
        }
        let (left, right) = (left_operand(&text, at), right_operand(&text, at));
        let constant = |operand: &str| {
            if operand.starts_with('(') {
                group_is_constant(operand)
            } else {
                is_constant(operand)
            }
        };
        if !(constant(left) && constant(right)) {
            found.push(format!(
                "line {}: {} {c} {}",
                line_of(&text, at),
                left.trim(),
                right.trim()
            ));
        }
    }
    found
}

/// The text of every `select(...)` key list.
fn selects(text: &str) -> Vec<(usize, &str)> {
    let mut keys = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("select(") {
        let start = from + i + "select(".len();
        let mut depth = 1;
        let mut end = start;
        for (j, c) in text[start..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                end = start + j;
                break;
            }
        }
        keys.push((start, &text[start..end.max(start)]));
        from = start;
    }
    keys
}

/// Every parser select key that is a header stack's index (`lastIndex`, `nextIndex`,
/// `size`) rather than a field.
pub fn stack_index_selects(text: &str) -> Vec<String> {
    let text = code(text);
    selects(&text)
        .into_iter()
        .filter(|(_, keys)| {
            keys.split(|c: char| !is_word(c))
                .any(|w| ["lastIndex", "nextIndex", "size"].contains(&w))
        })
        .map(|(at, keys)| format!("line {}: select({keys})", line_of(&text, at)))
        .collect()
}

/// Every control instance (`Type() name;`) or table (`table name {`) applied from more than
/// one place in `text`, as `name: n applications`.
pub fn repeated_applications(text: &str) -> Vec<String> {
    let text = code(text);
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("table ") {
            names.push(rest.trim_end_matches('{').trim().to_string());
        } else if let Some((ty, rest)) = line.split_once("() ") {
            if let Some(name) = rest.strip_suffix(';') {
                if ty.chars().all(is_word) && name.chars().all(is_word) {
                    names.push(name.to_string());
                }
            }
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let calls = text.matches(&format!("{name}.apply(")).count();
            (calls > 1).then(|| format!("{name}: {calls} applications"))
        })
        .collect()
}

/// What lies between the first `{` of `text` and the first `}` after it; "" if none.
fn block_body(text: &str) -> &str {
    let open = text.find('{').map_or(text.len(), |i| i + 1);
    let close = text[open..].find('}').map_or(open, |i| open + i);
    &text[open..close]
}

/// The fields of `struct <name> { ... }` in `text`, each with the field lists its
/// `@field_list(...)` annotation names.
fn struct_fields(text: &str, name: &str) -> Vec<(String, Vec<u32>)> {
    let Some(start) = text.find(&format!("struct {name} {{")) else {
        return Vec::new();
    };
    let body = block_body(&text[start..]);
    body.split(';')
        .filter_map(|decl| {
            let decl = decl.trim();
            let name = decl.rsplit(char::is_whitespace).next()?.to_string();
            let lists = decl
                .split_once("@field_list(")
                .and_then(|(_, rest)| rest.split_once(')'))
                .map(|(ids, _)| {
                    ids.split(',')
                        .filter_map(|n| n.trim().parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            (!name.is_empty()).then_some((name, lists))
        })
        .collect()
}

/// The fields of `header <name> { ... }`, paddings left out.
fn header_fields(text: &str, name: &str) -> Vec<String> {
    let Some(start) = text.find(&format!("header {name} {{")) else {
        return Vec::new();
    };
    let body = block_body(&text[start..]);
    body.split(';')
        .filter_map(|d| d.trim().rsplit(char::is_whitespace).next())
        .filter(|f| !f.is_empty() && !f.starts_with("pad"))
        .map(str::to_string)
        .collect()
}

/// What a v1model program's recirculated pass could read that BMv2 does not keep, in the
/// whole program `text` (every include inlined):
///
/// - each field the TNA program carries to its next pass (`sml_bridge_h`, the list of what
///   a later pass reads) is in the field list `recirculate_preserving_field_list(N)` names,
///   in `metadata_t` or in the v1model wrapper `v1model_metadata_t`;
/// - `standard_metadata.ingress_port` is read only under a test that the packet is not a
///   recirculated one (`instance_type != PKT_INSTANCE_TYPE_INGRESS_RECIRC`), or as a key of
///   a parser `select` whose first case takes every recirculated packet elsewhere
///   (`(PKT_INSTANCE_TYPE_INGRESS_RECIRC, _)`: the parser's test for the CPU port).
pub fn unpreserved_recirculation_reads(text: &str) -> Vec<String> {
    let text = code(text);
    let mut found = Vec::new();
    let list: Option<u32> = text
        .split_once("recirculate_preserving_field_list(")
        .and_then(|(_, rest)| rest.split_once(')'))
        .and_then(|(n, _)| n.trim().parse().ok());
    let Some(list) = list else {
        return vec!["no recirculate_preserving_field_list(N)".into()];
    };
    let mut kept: Vec<(String, Vec<u32>)> = struct_fields(&text, "metadata_t");
    kept.extend(struct_fields(&text, "v1model_metadata_t"));
    for field in header_fields(&text, "sml_bridge_h") {
        let preserved = kept
            .iter()
            .any(|(name, lists)| *name == field && lists.contains(&list));
        if !preserved {
            found.push(format!("{field}: not in field list {list}"));
        }
    }
    let read = "standard_metadata.ingress_port";
    let guard = "instance_type != PKT_INSTANCE_TYPE_INGRESS_RECIRC";
    for (at, _) in text.match_indices(read) {
        let selected_apart = {
            let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            let rest = &text[line_start..];
            let first_case = rest.lines().nth(1).unwrap_or_default().trim();
            rest.lines().next().unwrap_or_default().contains("select(")
                && first_case.starts_with("(PKT_INSTANCE_TYPE_INGRESS_RECIRC, _)")
        };
        if !selected_apart
            && !enclosing_conditions(&text, at)
                .iter()
                .any(|c| c.contains(guard))
        {
            found.push(format!(
                "line {}: {read} read where a recirculated pass reaches",
                line_of(&text, at)
            ));
        }
    }
    found
}

/// The lines that open the blocks enclosing byte `at` (`if (...) {` and the like), and the
/// line of `at` itself (a condition on one line).
fn enclosing_conditions(text: &str, at: usize) -> Vec<&str> {
    let mut lines = Vec::new();
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    lines.push(&text[line_start..line_end]);
    for i in enclosing_braces(text, at) {
        let start = text[..i].rfind('\n').map_or(0, |j| j + 1);
        lines.push(&text[start..i]);
    }
    lines
}

/// The offsets of the `{`s of the blocks enclosing byte `at` of `text`, innermost first.
fn enclosing_braces(text: &str, at: usize) -> Vec<usize> {
    let mut braces = Vec::new();
    let mut depth = 0;
    for (i, c) in text[..at].char_indices().rev() {
        match c {
            '}' => depth += 1,
            '{' if depth > 0 => depth -= 1,
            '{' => braces.push(i),
            _ => {}
        }
    }
    braces
}

pub mod admission;
#[cfg(test)]
mod planted;
