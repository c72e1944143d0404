//! The golden switch scenarios (`tests/vectors/switch.txt`) are what the reference switch
//! does today, and the file parses back to exactly what it renders.

use switchml_tests::scenarios::{self, outcome, switch_for, Outcome};

#[test]
fn the_committed_file_is_what_the_reference_switch_does() {
    let rendered = scenarios::render(&scenarios::all());
    if std::env::var_os("UPDATE_VECTORS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors/switch.txt");
        std::fs::write(path, &rendered).unwrap();
    }
    assert_eq!(
        scenarios::SWITCH,
        rendered,
        "switch behaviour changed: review, then UPDATE_VECTORS=1 to rewrite the file"
    );
}

#[test]
fn replaying_the_file_through_a_fresh_switch_reproduces_every_output() {
    let loaded = scenarios::load(scenarios::SWITCH).unwrap();
    assert_eq!(loaded, scenarios::all());
    let mut steps = 0;
    for s in &loaded {
        let mut sw = switch_for(s);
        for (input, expected) in &s.steps {
            assert_eq!(&outcome(&mut sw, input), expected, "[{}]", s.name);
            steps += 1;
        }
    }
    assert!(steps > 40);
    // Every kind of outcome and all the drop reasons a single datagram can cause appear.
    let all: Vec<&Outcome> = loaded
        .iter()
        .flat_map(|s| s.steps.iter().map(|(_, o)| o))
        .collect();
    assert!(all.iter().any(|o| matches!(o, Outcome::Multicast(_))));
    assert!(all.iter().any(|o| matches!(o, Outcome::Unicast(..))));
    assert!(all.iter().any(|o| matches!(o, Outcome::Consumed)));
    let covered = scenarios::reasons_covered(&loaded);
    for reason in [
        "malformed",
        "unknown_type",
        "unexpected_type",
        "unknown_job",
        "unknown_rank",
        "slot_range",
        "count_too_large",
        "bad_version",
        "stale",
        "duplicate",
        "count_mismatch",
        "bad_session",
    ] {
        assert!(covered.contains(&reason), "no scenario drops for {reason}");
    }
}

#[test]
fn loader_errors_name_the_line() {
    let err = scenarios::load("[a]\nmeaning: x\nout: consumed\n").unwrap_err();
    assert!(err.starts_with("line 3"), "{err}");
    assert!(scenarios::load("in: 01\n")
        .unwrap_err()
        .starts_with("line 1"));
}

/// The `multi_pass_*` scenarios make results of more than one pass visible: multicast
/// Results of 65, 100 and 256 values (one with OVERFLOW), and unicast answers to resends of
/// more than 64.
#[test]
fn multi_pass_results_are_in_the_expected_output() {
    use switchml_core::wire::{Flags, Message};
    let loaded = scenarios::load(scenarios::SWITCH).unwrap();
    let results = |multicast: bool| -> Vec<(u16, bool)> {
        loaded
            .iter()
            .filter(|s| s.name.starts_with("multi_pass_"))
            .flat_map(|s| s.steps.iter().map(|(_, o)| o))
            .filter_map(|o| match (o, multicast) {
                (Outcome::Multicast(b), true) | (Outcome::Unicast(_, b), false) => {
                    match Message::parse(b).ok()? {
                        Message::Data(d, _) if d.count > 64 => {
                            Some((d.count, d.flags.contains(Flags::OVERFLOW)))
                        }
                        _ => None,
                    }
                }
                _ => None,
            })
            .collect()
    };
    let multicast = results(true);
    for k in [65, 100, 256] {
        assert!(multicast.iter().any(|&(c, _)| c == k), "no Result of {k}");
    }
    assert!(multicast.contains(&(256, true)), "{multicast:?}");
    assert!(results(false).len() >= 2);
}
