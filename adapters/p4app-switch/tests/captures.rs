//! The original client's captures (`shared/p4app/frames`, beside the repository) replayed
//! frame by frame into the data plane: every request frame in capture order, exactly as
//! the client sent it (IPv4 checksum 0, UDP checksum of the pseudo-header), and every frame
//! the data plane sends compared byte for byte with the reply frames captured from the
//! stand-in switch the client accepted: Ethernet, IPv4 (TTL 64, id 0, no flags, checksum),
//! UDP (ports, checksum 0) and the dialect's header and values.
//!
//! Only the lossless captures: in the others the stand-in dropped frames the capture holds.
//! `SWITCHML_P4APP_FRAMES` names the folder (then it must be there); unset, a missing
//! `../shared/p4app/frames` is said and the test passes.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use switchml_p4app_switch::dataplane::{Command, Engine, Slot};
use switchml_p4app_switch::Peer;

const SWITCH: Peer = Peer {
    mac: [2, 0, 0, 0, 0, 0xfe],
    ip: Ipv4Addr::new(10, 77, 0, 254),
};

/// The records of a little-endian, microsecond libpcap file of Ethernet frames.
fn records(file: &[u8]) -> Vec<&[u8]> {
    let word = |o: usize| u32::from_le_bytes(file[o..o + 4].try_into().unwrap()) as usize;
    assert_eq!(file[..4], [0xd4, 0xc3, 0xb2, 0xa1], "little-endian libpcap");
    assert_eq!(word(20), 1, "Ethernet");
    let (mut out, mut at) = (Vec::new(), 24);
    while at < file.len() {
        let len = word(at + 8);
        out.push(&file[at + 16..at + 16 + len]);
        at += 16 + len;
    }
    out
}

fn replay(name: &str, dir: &std::path::Path) {
    let file = std::fs::read(dir.join(name)).expect("read the capture");
    let frames = records(&file);
    let from_switch = |f: &[u8]| f.len() >= 12 && f[6..12] == SWITCH.mac;
    // Rank i − 1 is worker i: MAC 02:00:00:00:00:0i, IP 10.77.0.i (the README's table).
    let mut workers: Vec<u8> = frames
        .iter()
        .filter(|f| f.len() >= 12 && f[..6] == SWITCH.mac)
        .map(|f| f[11])
        .collect();
    workers.sort_unstable();
    workers.dedup();
    let mut slots = vec![Slot::EMPTY; 64];
    let mut engine = Engine::new(&mut slots, SWITCH.mac, SWITCH.ip);
    engine.apply(Command::Reset {
        workers: workers.len() as u16,
    });
    for (rank, &i) in workers.iter().enumerate() {
        let peer = Peer {
            mac: [2, 0, 0, 0, 0, i],
            ip: Ipv4Addr::new(10, 77, 0, i),
        };
        engine.apply(Command::Register {
            rank: rank as u16,
            peer,
        });
    }
    let mut sent = Vec::new();
    let mut out = [0u8; 2048];
    for f in frames.iter().filter(|f| !from_switch(f)) {
        engine.handle(f, f.len(), &mut out, &mut |reply| {
            sent.push(reply.to_vec());
            Ok(())
        });
    }
    let captured: Vec<&[u8]> = frames.into_iter().filter(|f| from_switch(f)).collect();
    assert_eq!(sent.len(), captured.len(), "{name}: reply count");
    for (k, (ours, theirs)) in sent.iter().zip(&captured).enumerate() {
        assert_eq!(ours.as_slice(), *theirs, "{name}: reply {k}");
    }
    let s = engine.stats();
    assert_eq!(
        s.frames.malformed + s.frames.unknown_sender + s.frames.wrong_port,
        0
    );
    eprintln!("{name}: {} replies identical; {s:?}", sent.len());
}

#[test]
fn the_lossless_captures_replay_byte_for_byte() {
    let dir = match std::env::var_os("SWITCHML_P4APP_FRAMES") {
        Some(d) => PathBuf::from(d),
        None => {
            let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/p4app/frames");
            if !d.is_dir() {
                eprintln!("skipped: {} is absent", d.display());
                return;
            }
            d
        }
    };
    for name in [
        "int32-1worker.pcap",
        "float32-1worker.pcap",
        "float32-2workers.pcap",
    ] {
        replay(name, &dir);
    }
}
