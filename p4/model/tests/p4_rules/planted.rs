//! Each rule of `p4_rules` fails on a planted violation, a few lines of P4 with the
//! mistake a compiler or BMv2 has caught in the programs, and passes the same lines fixed.

use super::*;

#[test]
fn a_runtime_modulo_or_division_is_found_and_constant_ones_are_not() {
    // v1model/join_handler.p4 before issue 31.
    let bad = "if (hdr.join.slot_count != 0) {\n\
               \x20   if (hdr.join.slot_lo % hdr.join.slot_count == 0\n\
               \x20       && hdr.join.slot_lo / hdr.join.slot_count < hdr.join.lanes) {";
    let found = runtime_divisions(bad);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("line 2: hdr.join.slot_lo % hdr.join.slot_count"));
    assert!(found[1].starts_with("line 3: hdr.join.slot_lo / hdr.join.slot_count"));
    for bad in [
        "x = meta.a / 2;",
        "x = 64 % meta.b;",
        "x = (meta.a + 1) / 2;",
        "x = POOL_SLOTS / (bit<16>)meta.c;",
    ] {
        assert_eq!(runtime_divisions(bad).len(), 1, "{bad}");
    }
    let fine = "// slot_lo % slot_count, in prose\n\
                /* a / b */ #include \"../include/headers.p4\"\n\
                const bit<32> A = POOL_SLOTS / 8;\n\
                const bit<32> B = (MAX_BLOCKS * 2) % 3;\n\
                x = (bit<16>)(VALUES_PER_PASS / 4);";
    assert_eq!(runtime_divisions(fine), Vec::<String>::new());
}

#[test]
fn a_select_on_a_stack_index_is_found() {
    // v1model/parser.p4 before issue 18's fix.
    let bad = "state parse_values {\n    transition select(hdr.values.lastIndex) {";
    assert_eq!(
        stack_index_selects(bad),
        ["line 2: select(hdr.values.lastIndex)"]
    );
    let fine = "transition select(meta.values_left, meta.values_parsed) {\n\
                // select(hdr.values.lastIndex) in a comment";
    assert_eq!(stack_index_selects(fine), Vec::<String>::new());
}

#[test]
fn a_control_or_table_applied_twice_is_found() {
    let control = "UseChecker() use_checker;\napply {\n    use_checker.apply(meta, 0);\n\
                   \x20   if (read == 1) { use_checker.apply(meta, 1); }\n}";
    assert_eq!(
        repeated_applications(control),
        ["use_checker: 2 applications"]
    );
    let table = "table lane_alignment {\n    key = { hdr.join.slot_lo : exact; }\n}\n\
                 apply { lane_alignment.apply(); lane_alignment.apply(); }";
    assert_eq!(
        repeated_applications(table),
        ["lane_alignment: 2 applications"]
    );
    let once = "UseChecker() use_checker;\n// use_checker.apply(meta, 1);\n\
                apply { use_checker.apply(meta, read); }";
    assert_eq!(repeated_applications(once), Vec::<String>::new());
}

/// The v1model program before issue 31's fix, cut down: the bridge lists the port, metadata
/// does not keep it, and the ingress reads standard metadata's in every pass.
const LOST_PORT: &str = "header sml_bridge_h {\n    bit<8> message;\n    bit<7> pad3;\n\
    \x20   bit<9> ingress_port;\n}\n\
    struct metadata_t {\n    @field_list(1) bit<8> message;\n    bit<9> ingress_port;\n}\n\
    control SwitchmlIngress() {\n    apply {\n        if (meta.verdict == VERDICT_UP) {\n\
    \x20       } else {\n\
    \x20           standard_metadata.egress_spec = standard_metadata.ingress_port;\n\
    \x20       }\n    }\n}\n\
    control SwitchmlEgress() { apply { recirculate_preserving_field_list(1); } }\n";

#[test]
fn metadata_a_recirculated_pass_reads_unpreserved_is_found() {
    let found = unpreserved_recirculation_reads(LOST_PORT);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0], "ingress_port: not in field list 1");
    assert!(found[1].contains("standard_metadata.ingress_port read"));
    // The fix: the port in the wrapper's field list, read from standard metadata in pass 0.
    let fixed = LOST_PORT
        .replace(
            "control SwitchmlIngress() {\n    apply {\n",
            "struct v1model_metadata_t {\n    metadata_t sml;\n\
             \x20   @field_list(1) bit<9> ingress_port;\n}\n\
             control SwitchmlIngress() {\n    apply {\n\
             \x20       if (standard_metadata.instance_type != PKT_INSTANCE_TYPE_INGRESS_RECIRC) {\n\
             \x20           v1.ingress_port = standard_metadata.ingress_port;\n        }\n",
        )
        .replace("egress_spec = standard_metadata.ingress_port", "egress_spec = v1.ingress_port");
    assert_eq!(
        unpreserved_recirculation_reads(&fixed),
        Vec::<String>::new()
    );
    // The same field kept in another list than the one the recirculation names.
    let other_list = fixed.replace(
        "@field_list(1) bit<9> ingress_port",
        "@field_list(2) bit<9> ingress_port",
    );
    assert_eq!(
        unpreserved_recirculation_reads(&other_list),
        ["ingress_port: not in field list 1"]
    );
}
