//! The job key's text form (protocol.md §4.1): 1 to 16 hex digits, one optional `0x`,
//! white space around it ignored; anything else is an error, never a key.

use switchml_core::auth::parse_key;

#[test]
fn a_key_is_one_to_sixteen_hex_digits_after_an_optional_0x() {
    for (text, key) in [
        ("0", 0),
        ("ab", 0xab),
        ("AB", 0xab),
        ("0xab", 0xab),
        ("  0x00ab\n", 0xab),
        ("0123456789abcdef", 0x0123_4567_89ab_cdef),
        ("0xFFFFFFFFFFFFFFFF", u64::MAX),
    ] {
        assert_eq!(parse_key(text), Ok(key), "{text:?}");
    }
}

#[test]
fn anything_else_is_no_key() {
    for text in [
        "",
        "   ",
        "0x",
        "+ab",
        "-1",
        "0x0xab",
        "0Xab",
        "x1",
        "ab cd",
        "0g",
        // 17 digits, even when the value would fit.
        "00000000000000001",
        "0x00000000000000001",
    ] {
        assert!(parse_key(text).is_err(), "{text:?} parsed as a key");
    }
}
