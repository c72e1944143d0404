//! The rules of issue 25 (protocol.md §4.2, "The P4 programs"): a pipeline cannot compute
//! an HMAC, so the programs leave every proof of a key to the controller on the CPU port.
//!
//! - [`key_comparisons`]: no program compares a key or carries one (a header field, table
//!   action data or metadata named `key` or `*_key`): a Join carries a tag, not the key.
//! - [`joins_outside_the_cpu_port`]: a Join, Status or Cookie that did not come from the
//!   CPU port goes to it; the join handler and the run tracker see a Join only from the CPU
//!   port; nothing builds a StatusReply (the controller answers Status).
//! - [`probe_reply_session`]: the ProbeReply header names the Probe's session at bytes
//!   24–27 of the message, the bitmap after it (§3.5), and the reply builder writes it.

use super::{code, line_of};

/// Whether `word` names a key: `key` or `something_key`.
fn is_key(word: &str) -> bool {
    word == "key" || word.ends_with("_key")
}

/// The words of `line` (identifiers, split at dots and brackets).
fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// Every comparison that involves a key, and every declaration of one (a `bit<N>` field,
/// parameter or local named `key` or `*_key`), in `text`.
pub fn key_comparisons(text: &str) -> Vec<String> {
    let text = code(text);
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let compares = line.contains("==") || line.contains("!=");
        if compares && words(line).any(is_key) {
            found.push(format!("line {}: compares a key: {}", n + 1, line.trim()));
        }
        for (at, _) in line.match_indices("bit<") {
            let declared = line[at..]
                .split_once('>')
                .and_then(|(_, rest)| words(rest).next());
            if declared.is_some_and(is_key) {
                found.push(format!("line {}: declares a key: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// The conditions of the `if`s enclosing byte `at` of `text`, innermost first: for each
/// enclosing `{`, the text from the `if (` before it to it (a condition over several
/// lines whole).
fn enclosing_ifs(text: &str, at: usize) -> Vec<&str> {
    super::enclosing_braces(text, at)
        .into_iter()
        .filter_map(|i| text[..i].rfind("if (").map(|start| &text[start..i]))
        .collect()
}

/// Whether the application at `at` runs only for what did not go to the CPU port: under an
/// `if` testing `to_cpu == 0`, or under a flag that is cleared where `to_cpu == 1`.
fn guarded(text: &str, at: usize) -> bool {
    let cleared = |flag: &str| {
        text.split("if (meta.to_cpu == 1) {\n")
            .skip(1)
            .any(|after| after.trim_start().starts_with(&format!("{flag} = 0;")))
    };
    enclosing_ifs(text, at)
        .iter()
        .any(|c| c.contains("to_cpu == 0") || words(c).any(cleared))
}

/// Where the whole program `text` lets a Join or Status reach the data plane's handling
/// without the controller (see the module docs); empty if nowhere.
pub fn joins_outside_the_cpu_port(text: &str) -> Vec<String> {
    let text = code(text);
    let mut found = Vec::new();
    let Some(punt) = text.find("meta.to_cpu = 1;") else {
        return vec!["nothing goes to the CPU port (no `meta.to_cpu = 1;`)".into()];
    };
    if !enclosing_ifs(&text, punt)
        .first()
        .is_some_and(|c| c.contains("from_cpu == 0"))
    {
        found.push(format!(
            "line {}: sends to the CPU port what came from it",
            line_of(&text, punt)
        ));
    }
    let decided = text[..punt]
        .rfind("validator.apply(")
        .map_or("", |v| &text[v..punt]);
    for message in ["MSG_JOIN", "MSG_STATUS", "MSG_COOKIE"] {
        if !decided.contains(message) {
            found.push(format!("{message} does not go to the CPU port"));
        }
    }
    for control in ["join_handler.apply(", "run_tracker.apply("] {
        for (at, _) in text.match_indices(control) {
            if !guarded(&text, at) {
                found.push(format!(
                    "line {}: {control}) runs for a message the controller has not seen",
                    line_of(&text, at)
                ));
            }
        }
    }
    for built in ["status_handler.apply(", "msg_type = TYPE_STATUS_REPLY"] {
        if let Some(at) = text.find(built) {
            found.push(format!(
                "line {}: the data plane answers Status ({built})",
                line_of(&text, at)
            ));
        }
    }
    found
}

/// The fields of `header <name> { ... }`: (name, bits), in order.
fn header_widths(text: &str, name: &str) -> Vec<(String, u32)> {
    let Some(start) = text.find(&format!("header {name} {{")) else {
        return Vec::new();
    };
    let body = super::block_body(&text[start..]);
    body.split(';')
        .filter_map(|d| {
            let (_, rest) = d.split_once("bit<")?;
            let (bits, field) = rest.split_once('>')?;
            Some((field.trim().to_string(), bits.trim().parse().ok()?))
        })
        .collect()
}

/// Where the ProbeReply in the whole program `text` differs from protocol.md §3.5: the
/// `session` field at bytes 24–27 (after the 6-byte prefix), the header ending there (the
/// bitmap at 28), the reply builder echoing the Probe's session and counting 28 bytes
/// before the bitmap.
pub fn probe_reply_session(text: &str) -> Vec<String> {
    const PREFIX: u32 = 6;
    let text = code(text);
    let fields = header_widths(&text, "sml_probe_reply_h");
    let mut found = Vec::new();
    let mut at = PREFIX * 8;
    let mut session = None;
    for (name, bits) in &fields {
        if name == "session" {
            session = Some((at / 8, *bits));
        }
        at += bits;
    }
    match session {
        None => found.push("sml_probe_reply_h has no session".into()),
        Some((24, 32)) => {}
        Some((byte, bits)) => found.push(format!(
            "sml_probe_reply_h.session is {bits} bits at byte {byte}, not 32 at 24"
        )),
    }
    if at != 28 * 8 {
        found.push(format!(
            "the ProbeReply's bitmap starts at bit {at}, not byte 28"
        ));
    }
    for line in [
        "hdr.probe_reply.session = hdr.probe.session;",
        "meta.reply_len = 28 + bitmap_len;",
    ] {
        if !text.contains(line) {
            found.push(format!("the reply builder lacks `{line}`"));
        }
    }
    found
}

#[cfg(test)]
mod planted {
    use super::*;

    #[test]
    fn a_key_compared_or_declared_is_found_and_table_keys_are_not() {
        // v1model and TNA join_handler.p4, headers.p4 and classifier.p4 before issue 25.
        let bad = "} else if (hdr.join.key != meta.job_key) {\n\
                   } else if (hdr.join.key[63:32] != meta.job_key[63:32]\n\
                   \x20   bit<64> key;                               // the job's credential\n\
                   \x20   bit<16> job_index, bit<64> full, bit<64> key) {\n\
                   \x20   bit<64> parent_key;";
        let found = key_comparisons(bad);
        assert_eq!(found.len(), 5, "{found:?}");
        assert!(found[0].starts_with("line 1: compares a key"));
        assert!(found[1].starts_with("line 2: compares a key"));
        assert!(found[4].starts_with("line 5: declares a key"));
        let fine = "key = { meta.lookup_job : exact; }\n\
                    // a Join proves the job's key == nothing the pipeline sees\n\
                    if (hdr.prefix.job == meta.lookup_job) {";
        assert_eq!(key_comparisons(fine), [""; 0]);
    }

    #[test]
    fn a_join_or_status_the_data_plane_takes_from_any_port_is_found() {
        // v1model/switchml.p4 before issue 25: no punt, the join handler and the status
        // handler on every Join and Status, the StatusReply built in the data plane.
        let bad = "validator.apply(hdr, meta);\n\
                   if (meta.message == MSG_JOIN) {\n\
                   \x20   join_handler.apply(hdr, meta);\n\
                   } else if (meta.message == MSG_STATUS) {\n\
                   \x20   status_handler.apply(hdr, meta);\n\
                   }\n\
                   hdr.prefix.msg_type = TYPE_STATUS_REPLY;";
        assert_eq!(
            joins_outside_the_cpu_port(bad),
            ["nothing goes to the CPU port (no `meta.to_cpu = 1;`)"]
        );
        let unguarded = "validator.apply(hdr, meta);\n\
                         if (meta.message == MSG_JOIN || meta.message == MSG_STATUS) {\n\
                         \x20   meta.to_cpu = 1;\n\
                         }\n\
                         if (meta.message == MSG_JOIN) {\n\
                         \x20   join_handler.apply(hdr, meta);\n\
                         }\n\
                         if (track == 1) {\n\
                         \x20   run_tracker.apply(hdr, meta);\n\
                         }\n\
                         hdr.prefix.msg_type = TYPE_STATUS_REPLY;";
        let found = joins_outside_the_cpu_port(unguarded);
        assert_eq!(
            found,
            [
                "line 3: sends to the CPU port what came from it",
                "MSG_COOKIE does not go to the CPU port",
                "line 6: join_handler.apply() runs for a message the controller has not seen",
                "line 9: run_tracker.apply() runs for a message the controller has not seen",
                "line 11: the data plane answers Status (msg_type = TYPE_STATUS_REPLY)",
            ]
        );
        let fine = "validator.apply(hdr, meta);\n\
                    if (meta.message == MSG_JOIN) {\n\
                    \x20   controllers = 1;\n\
                    }\n\
                    if (meta.message == MSG_STATUS || meta.message == MSG_COOKIE) {\n\
                    \x20   controllers = 1;\n\
                    }\n\
                    if (controllers == 1 && meta.from_cpu == 0) {\n\
                    \x20   meta.to_cpu = 1;\n\
                    }\n\
                    if (meta.to_cpu == 1) {\n\
                    \x20   track = 0;\n\
                    }\n\
                    if (meta.recirculated == 0 && meta.to_cpu == 0) {\n\
                    \x20   join_handler.apply(hdr, meta);\n\
                    }\n\
                    if (track == 1) {\n\
                    \x20   run_tracker.apply(hdr, meta);\n\
                    }";
        assert_eq!(joins_outside_the_cpu_port(fine), [""; 0]);
    }

    #[test]
    fn a_probe_reply_without_the_session_where_the_spec_puts_it_is_found() {
        let builder = "hdr.probe_reply.session = hdr.probe.session;\n\
                       meta.reply_len = 28 + bitmap_len;";
        // include/headers.p4 before issue 25.
        let old = "header sml_probe_reply_h {\n bit<16> slot;\n bit<8> ver;\n bit<8> state;\n\
                   bit<16> remaining;\n bit<32> seq;\n bit<32> epoch;\n bit<16> world;\n\
                   bit<16> bitmap_len;\n}\nmeta.reply_len = 24 + bitmap_len;";
        assert_eq!(
            probe_reply_session(old),
            [
                "sml_probe_reply_h has no session",
                "the ProbeReply's bitmap starts at bit 192, not byte 28",
                "the reply builder lacks `hdr.probe_reply.session = hdr.probe.session;`",
                "the reply builder lacks `meta.reply_len = 28 + bitmap_len;`",
            ]
        );
        let first = format!(
            "header sml_probe_reply_h {{\n bit<32> session;\n bit<16> slot;\n bit<8> ver;\n\
             bit<8> state;\n bit<16> remaining;\n bit<32> seq;\n bit<32> epoch;\n\
             bit<16> world;\n bit<16> bitmap_len;\n}}\n{builder}"
        );
        assert_eq!(
            probe_reply_session(&first),
            ["sml_probe_reply_h.session is 32 bits at byte 6, not 32 at 24"]
        );
        let fine = first.replace(" bit<32> session;\n", "").replace(
            " bit<16> bitmap_len;\n",
            " bit<16> bitmap_len;\n bit<32> session;\n",
        );
        assert_eq!(probe_reply_session(&fine), [""; 0]);
    }
}
