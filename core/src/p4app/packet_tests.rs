use super::*;

extern crate std;
use std::string::ToString;
use std::vec::Vec;

/// The header of a request from `float32-1worker.pcap` (job 0, tsi 518, slot 6, set 0,
/// e0 15), followed by 64 values 0, 1, …, 63 and, for the reply below, set 1.
const HEAD: [u8; HEADER_LEN] = [0x11, 0x00, 0x06, 0x02, 0x00, 0x00, 0x80, 0x06, 0x0f, 0xfe];
const REPR: P4appRepr = P4appRepr {
    msg_type: 1,
    unused_bit: false,
    size: P4appSize::Elements64,
    job: 0,
    tsi: 518,
    set: true,
    slot: 6,
    e0: 15,
    e1: -2,
};

fn bytes() -> Vec<u8> {
    let mut b = HEAD.to_vec();
    for v in 0..64i32 {
        b.extend_from_slice(&(v - 32).to_be_bytes());
    }
    b
}

#[test]
fn decode_known_bytes() {
    let b = bytes();
    let p = P4appPacket::new_checked(&b[..]).unwrap();
    assert_eq!(P4appRepr::parse(&p), Ok(REPR));
    assert_eq!(p.pool_index(), 0x8006);
    assert_eq!(p.values().len(), 64);
    assert_eq!(p.values()[0].get(), -32);
    assert_eq!(p.values()[63].get(), 31);
}

#[test]
fn encode_to_known_bytes() {
    let mut out = [0xAAu8; HEADER_LEN + 256];
    assert_eq!(REPR.buffer_len(), 266);
    let mut p = P4appPacket::new_unchecked(&mut out[..REPR.buffer_len()]);
    REPR.emit(&mut p);
    for (i, v) in p.values_mut().iter_mut().enumerate() {
        v.set(i as i32 - 32);
    }
    assert_eq!(&out[..REPR.buffer_len()], &bytes()[..]);
    let big = P4appRepr {
        size: P4appSize::Elements256,
        unused_bit: true,
        msg_type: 0xf,
        ..REPR
    };
    let mut out = [0u8; HEADER_LEN + 1024];
    assert_eq!(big.buffer_len(), out.len());
    big.emit(&mut P4appPacket::new_unchecked(&mut out[..]));
    assert_eq!(out[0], 0xfb);
    let p = P4appPacket::new_checked(&out[..]).unwrap();
    assert_eq!(P4appRepr::parse(&p), Ok(big));
}

#[test]
fn reject_impossible_lengths_and_sizes() {
    let b = bytes();
    assert_eq!(
        P4appPacket::new_checked(&b[..HEADER_LEN - 1]).err(),
        Some(Error::Truncated)
    );
    assert_eq!(
        P4appPacket::new_checked(&b[..b.len() - 1]).err(),
        Some(Error::Truncated)
    );
    let mut long = b.clone();
    long.push(0);
    assert_eq!(
        P4appPacket::new_checked(&long[..]).err(),
        Some(Error::TrailingBytes)
    );
    // Sizes 0 and 2 are what the original switch drops; 4–7 were never defined.
    for code in [0u8, 2, 4, 5, 6, 7] {
        let mut bad = b.clone();
        P4appPacket::new_unchecked(&mut bad[..]).set_size_code(code);
        assert_eq!(
            P4appRepr::parse(&P4appPacket::new_unchecked(&bad[..])),
            Err(Error::Field("size")),
            "size code {code}"
        );
    }
    let mut bad = b.clone();
    P4appPacket::new_unchecked(&mut bad[..]).set_pool_index(0x4006);
    assert_eq!(
        P4appRepr::parse(&P4appPacket::new_unchecked(&bad[..])),
        Err(Error::Reserved("pool_index.bit14"))
    );
}

#[test]
fn setters_touch_only_their_field() {
    let mut b = bytes();
    let mut p = P4appPacket::new_unchecked(&mut b[..]);
    p.set_msg_type(2);
    p.set_job(9);
    p.set_tsi(0x0102_0304);
    p.set_e0(-126);
    p.set_e1(3);
    assert_eq!(
        &b[..HEADER_LEN],
        &[0x21, 9, 4, 3, 2, 1, 0x80, 0x06, 0x82, 3]
    );
}

#[test]
fn display_is_one_line() {
    assert_eq!(
        REPR.to_string(),
        "P4app type 1 size 64 job 0 tsi 518 slot 6 set 1 e0 15 e1 -2"
    );
}

#[test]
fn header_len_is_derived_from_the_fields() {
    assert_eq!(HEADER_LEN, 10);
    assert_eq!(core::mem::offset_of!(Header, e0), 8);
}
