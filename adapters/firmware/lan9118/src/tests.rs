//! The driver against the fake register block.

use smoltcp::phy::{Device, RxToken as _, TxToken as _};
use smoltcp::time::Instant;

use crate::fake::FakeChip;
use crate::regs::*;
use crate::{Error, FreeRunCounter, Lan9118, MTU};

const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
const FALLBACK: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

fn up(chip: &mut FakeChip) -> Lan9118<&mut FakeChip> {
    Lan9118::new(chip, FALLBACK).expect("the chip comes up")
}

fn frame(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(7) ^ seed).collect()
}

#[test]
fn bring_up_resets_enables_and_keeps_the_eeprom_address() {
    let mut chip = FakeChip::new(MAC);
    let nic = up(&mut chip);
    assert_eq!(nic.mac_address(), MAC);
    assert_eq!(chip.resets, 1);
    assert_eq!(
        chip.mac_cr,
        MAC_CR_FDPX | MAC_CR_TXEN | MAC_CR_RXEN,
        "PRMS off"
    );
    assert_eq!(chip.tx_cfg, TX_CFG_TX_ON);
    assert_eq!(chip.rx_cfg, 0);
    assert_eq!(chip.int_en, 0);
}

#[test]
fn bring_up_writes_the_fallback_address_when_the_eeprom_has_none() {
    let mut chip = FakeChip::new([0xFF; 6]);
    assert_eq!(up(&mut chip).mac_address(), FALLBACK);
    assert_eq!(chip.mac, FALLBACK);
}

#[test]
fn bring_up_refuses_a_missing_or_foreign_chip() {
    let mut chip = FakeChip::new(MAC);
    chip.byte_test = 0x4321_8765;
    assert_eq!(
        Lan9118::new(&mut chip, FALLBACK).err(),
        Some(Error::NotFound {
            byte_test: 0x4321_8765
        })
    );
    let mut chip = FakeChip::new(MAC);
    chip.id_rev = 0x9220_0000;
    assert_eq!(
        Lan9118::new(&mut chip, FALLBACK).err(),
        Some(Error::WrongChip {
            id_rev: 0x9220_0000
        })
    );
    let mut chip = FakeChip::new(MAC);
    chip.not_ready_for = u32::MAX;
    assert_eq!(
        Lan9118::new(&mut chip, FALLBACK).err(),
        Some(Error::Stuck { register: PMT_CTRL })
    );
}

#[test]
fn receive_hands_over_frames_of_every_length_without_their_crc() {
    let mut chip = FakeChip::new(MAC);
    let lens = [14, 60, 61, 62, 63, 64, 1514];
    for (i, &len) in lens.iter().enumerate() {
        chip.deliver(&frame(len, i as u8), false);
    }
    let mut nic = up(&mut chip);
    for (i, &len) in lens.iter().enumerate() {
        let (rx, _tx) = nic.receive(Instant::ZERO).expect("a frame");
        rx.consume(|bytes| assert_eq!(bytes, &frame(len, i as u8)[..]));
    }
    assert!(nic.receive(Instant::ZERO).is_none());
    assert_eq!(nic.counters().rx_frames, lens.len() as u32);
}

#[test]
fn receive_drops_frames_with_errors_and_stays_in_step() {
    let mut chip = FakeChip::new(MAC);
    chip.deliver(&frame(99, 1), true);
    chip.deliver(&frame(70, 2), false);
    chip.deliver(&frame(5, 3), false); // a runt: shorter than an Ethernet header
    chip.deliver(&frame(65, 4), false);
    let mut nic = up(&mut chip);
    let (rx, _) = nic.receive(Instant::ZERO).unwrap();
    rx.consume(|b| assert_eq!(b, &frame(70, 2)[..]));
    let (rx, _) = nic.receive(Instant::ZERO).unwrap();
    rx.consume(|b| assert_eq!(b, &frame(65, 4)[..]));
    assert!(nic.receive(Instant::ZERO).is_none());
    assert_eq!(nic.counters().rx_dropped, 2);
    assert!(
        chip.rx_data.is_empty(),
        "every word of the dropped frames read out"
    );
}

#[test]
fn transmit_writes_commands_and_words_and_drains_the_status_fifo() {
    let mut chip = FakeChip::new(MAC);
    let mut nic = up(&mut chip);
    for (i, len) in [42usize, 43, 97, MTU].into_iter().enumerate() {
        let tx = nic.transmit(Instant::ZERO).expect("room");
        tx.consume(len, |buf| buf.copy_from_slice(&frame(len, i as u8)));
    }
    // The token that comes with a received frame sends too.
    chip.deliver(&frame(60, 9), false);
    let mut nic = up(&mut chip);
    let (_rx, tx) = nic.receive(Instant::ZERO).unwrap();
    tx.consume(50, |buf| buf.copy_from_slice(&frame(50, 50)));
    assert_eq!(nic.counters().tx_frames, 1);
    let expect: Vec<Vec<u8>> = [(42, 0), (43, 1), (97, 2), (MTU, 3), (50, 50)]
        .iter()
        .map(|&(len, seed)| frame(len, seed))
        .collect();
    assert_eq!(chip.sent, expect);
    assert!(chip.tx_status.is_empty());
}

#[test]
fn transmit_waits_for_room_and_counts_status_errors() {
    let mut chip = FakeChip::new(MAC);
    chip.tx_free = 100;
    let mut nic = up(&mut chip);
    assert!(nic.transmit(Instant::ZERO).is_none(), "no room for an MTU");
    chip.tx_free = 4608;
    chip.tx_fail = true;
    let mut nic = up(&mut chip);
    nic.transmit(Instant::ZERO)
        .unwrap()
        .consume(60, |b| b.fill(0xAB));
    assert_eq!(nic.counters().tx_errors, 1);
}

#[test]
fn capabilities_say_ethernet_and_the_mtu() {
    let mut chip = FakeChip::new(MAC);
    let caps = up(&mut chip).capabilities();
    assert_eq!(caps.max_transmission_unit, MTU);
    assert_eq!(caps.medium, smoltcp::phy::Medium::Ethernet);
}

#[test]
fn link_and_free_running_counter() {
    let mut chip = FakeChip::new(MAC);
    assert!(up(&mut chip).link_up());
    chip.phy_bsr &= !PHY_BSR_LINK;
    assert!(!up(&mut chip).link_up());
    chip.free_run = 123_456;
    assert_eq!(FreeRunCounter::new(&mut chip).ticks(), 123_456);
}
