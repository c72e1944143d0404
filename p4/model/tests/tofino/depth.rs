//! Egress parse depth: every path of the egress parser, intrinsic metadata included, is at
//! most 160 bytes (bf-p4c `ParserEnforceDepthReq`).

use crate::p4text::{close_of, header_bits, parser_states, struct_fields, tna_program, State};

/// Tofino 1's limit on an egress parser's longest path, in bytes.
const EGRESS_PARSE_DEPTH: u32 = 160;
/// `egress_intrinsic_metadata_t` of Tofino 1's `tna.p4`, in bytes (the first extract).
const EGRESS_INTRINSIC_BYTES: u32 = 27;

/// The longest path of parser `parser` in bytes, and the path; `headers` is the struct its
/// `hdr` is. An error names a loop or an extract of unknown size.
fn longest_parse(text: &str, parser: &str, headers: &str) -> Result<(u32, Vec<String>), String> {
    let sizes = header_bits(text);
    let fields = struct_fields(text, headers);
    let states = parser_states(text, parser);
    let bits_of = |state: &State| -> Result<u32, String> {
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
        states: &[State],
        bits_of: &dyn Fn(&State) -> Result<u32, String>,
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
            if tiers { 140 } else { 120 },
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
