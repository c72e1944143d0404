//! The original client's frames (`shared/p4app/frames/*.pcap`, see its README) replayed into
//! [`P4appSwitch`]: every request in capture order, our replies compared field by field
//! with the captured ones, which came from a stand-in switch the client accepted (it
//! verified every job). A rank is a worker's (MAC, IP) in order of first appearance.
//!
//! The captures live outside the repository. Where `SWITCHML_P4APP_FRAMES` names a folder
//! the test reads it and fails if it cannot; where it is unset and the default
//! `../shared/p4app/frames` (beside the repository) is absent, the test says so and passes.
//! A few frames are copied here so that the comparison always runs on something.

use std::collections::BTreeMap;
use std::path::PathBuf;

use switchml_core::p4app::{
    P4appConfig, P4appPacket, P4appRepr, P4appScale, P4appSlot, P4appSwitch, P4appTensor,
    P4appVerdict, P4appWorker,
};
use switchml_core::time::Instant;

const SWITCH_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xfe];
/// The stand-in's slots: the client used slots 0..8 (one thread, 8 outstanding).
const SLOTS: usize = 16;

/// A UDP datagram in an Ethernet frame.
struct Datagram<'a> {
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    dst_port: u16,
    payload: &'a [u8],
}

/// The frames of a libpcap file (Ethernet link type, microsecond or nanosecond stamps,
/// little- or big-endian).
fn pcap_frames(file: &[u8]) -> Vec<&[u8]> {
    assert!(file.len() >= 24, "not a pcap file");
    let magic = [file[0], file[1], file[2], file[3]];
    let le = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => panic!("not a pcap file: magic {magic:02x?}"),
    };
    let u32_at = |o: usize| {
        let b = [file[o], file[o + 1], file[o + 2], file[o + 3]];
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    assert_eq!(u32_at(20), 1, "link type is not Ethernet");
    let mut frames = Vec::new();
    let mut o = 24;
    while o + 16 <= file.len() {
        let caplen = u32_at(o + 8) as usize;
        let frame = &file[o + 16..o + 16 + caplen];
        frames.push(frame);
        o += 16 + caplen;
    }
    assert_eq!(o, file.len(), "trailing bytes after the last record");
    frames
}

/// The UDP datagram in an IPv4 Ethernet frame; `None` for anything else (the IPv6 router
/// solicitation at the start of one capture).
fn udp(frame: &[u8]) -> Option<Datagram<'_>> {
    if frame.len() < 42 || frame[12..14] != [0x08, 0x00] || frame[23] != 17 {
        return None;
    }
    let ihl = usize::from(frame[14] & 0x0f) * 4;
    let udp = 14 + ihl;
    let udp_len = usize::from(u16::from_be_bytes([frame[udp + 4], frame[udp + 5]]));
    let mac = |o: usize| <[u8; 6]>::try_from(&frame[o..o + 6]).unwrap();
    let ip = |o: usize| <[u8; 4]>::try_from(&frame[o..o + 4]).unwrap();
    Some(Datagram {
        dst_mac: mac(0),
        src_mac: mac(6),
        src_ip: ip(26),
        dst_ip: ip(30),
        dst_port: u16::from_be_bytes([frame[udp + 2], frame[udp + 3]]),
        payload: &frame[udp + 8..udp + udp_len],
    })
}

/// Assert that two replies agree field by field, then value by value.
fn assert_same_reply(ours: &[u8], captured: &[u8], what: &str) {
    let parse = |b: &[u8]| P4appRepr::parse(&P4appPacket::new_checked(b).unwrap()).unwrap();
    assert_eq!(parse(ours), parse(captured), "{what}: header");
    let values = |b: &[u8]| {
        let p = P4appPacket::new_unchecked(b);
        p.values().iter().map(|v| v.get()).collect::<Vec<_>>()
    };
    assert_eq!(values(ours), values(captured), "{what}: values");
}

/// Replay one capture; `lossy` when the stand-in dropped frames (dropped requests are in
/// the capture, dropped replies are not), where our replies may be more than the captured
/// ones but must include each of them.
fn replay(name: &str, file: &[u8], lossy: bool) {
    let datagrams: Vec<Datagram<'_>> = pcap_frames(file).into_iter().filter_map(udp).collect();
    let mut ranks: Vec<([u8; 6], [u8; 4])> = Vec::new();
    for d in datagrams.iter().filter(|d| d.dst_mac == SWITCH_MAC) {
        if !ranks.contains(&(d.src_mac, d.src_ip)) {
            ranks.push((d.src_mac, d.src_ip));
        }
    }
    let rank_of = |mac: [u8; 6], ip: [u8; 4]| ranks.iter().position(|r| *r == (mac, ip));
    let mut slots = vec![P4appSlot::<1, 64>::EMPTY; SLOTS];
    let mut sw = P4appSwitch::new(&mut slots);
    sw.reset(ranks.len() as u16).unwrap();
    let mut ours: Vec<Vec<Vec<u8>>> = vec![Vec::new(); ranks.len()];
    let mut captured: Vec<Vec<Vec<u8>>> = vec![Vec::new(); ranks.len()];
    let mut out = [0u8; 1100];
    for d in &datagrams {
        if d.dst_mac == SWITCH_MAC {
            assert_eq!(d.dst_port, 0xBEE0, "{name}: a request to another port");
            let rank = rank_of(d.src_mac, d.src_ip).unwrap();
            match sw.process(rank as u16, d.payload, &mut out) {
                P4appVerdict::Multicast { len } => {
                    ours.iter_mut().for_each(|o| o.push(out[..len].to_vec()))
                }
                P4appVerdict::Unicast { rank, len } => {
                    ours[usize::from(rank)].push(out[..len].to_vec())
                }
                P4appVerdict::Consumed | P4appVerdict::Drop(_) => {}
            }
        } else if d.src_mac == SWITCH_MAC {
            let rank = rank_of(d.dst_mac, d.dst_ip).expect("a reply to an unknown worker");
            captured[rank].push(d.payload.to_vec());
        }
    }
    let c = sw.counters();
    println!("{name}: {} workers, {c:?}", ranks.len());
    assert_eq!(
        c.malformed + c.size + c.too_large + c.unknown_rank + c.slot + c.buffer_too_small,
        0,
        "{name}: a request our switch could not take"
    );
    for (rank, (ours, captured)) in ours.iter().zip(&captured).enumerate() {
        assert!(!captured.is_empty(), "{name}: no reply to rank {rank}");
        if !lossy {
            assert_eq!(ours.len(), captured.len(), "{name}: replies to rank {rank}");
            for (i, (o, c)) in ours.iter().zip(captured).enumerate() {
                assert_same_reply(o, c, &format!("{name}: reply {i} to rank {rank}"));
            }
            continue;
        }
        // Match each captured reply with one of ours to the same job and tsi, in order of
        // ours: a reply the stand-in dropped leaves one of ours unmatched, never the
        // other way round.
        let mut unmatched: Vec<&Vec<u8>> = ours.iter().collect();
        for (i, c) in captured.iter().enumerate() {
            let key = |b: &[u8]| {
                let p = P4appPacket::new_unchecked(b);
                (p.job(), p.tsi())
            };
            let at = unmatched
                .iter()
                .position(|o| key(o) == key(c))
                .unwrap_or_else(|| panic!("{name}: captured reply {i} to rank {rank} has no twin"));
            assert_same_reply(
                unmatched.remove(at),
                c,
                &format!("{name}: reply {i} to rank {rank}"),
            );
        }
    }
}

/// Where the captures are, or `None` (with the reason printed) when the test may skip them.
fn frames_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SWITCHML_P4APP_FRAMES") {
        return Some(PathBuf::from(dir));
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/p4app/frames");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "skipped: {} is absent and SWITCHML_P4APP_FRAMES is unset; set it to the folder \
             of p4app captures to replay them",
            dir.display()
        );
        None
    }
}

fn replay_file(file: &str, lossy: bool) {
    let Some(dir) = frames_dir() else {
        return;
    };
    let path = dir.join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    replay(file, &bytes, lossy);
}

#[test]
fn int32_one_worker() {
    replay_file("int32-1worker.pcap", false);
}

#[test]
fn float32_one_worker() {
    replay_file("float32-1worker.pcap", false);
}

#[test]
fn float32_two_workers() {
    replay_file("float32-2workers.pcap", false);
}

#[test]
fn int32_two_workers_with_loss() {
    replay_file("int32-2workers-loss1pct.pcap", true);
}

#[test]
fn float32_two_workers_with_loss() {
    replay_file("float32-2workers-loss2pct.pcap", true);
}

/// From `float32-2workers.pcap`: both workers' request tsi 8 (slot 0, set 1, e0 10; block 0
/// quantized with emax 6: 0, −2²⁴, 2·2²⁴, …), identical, and the stand-in's reply.
const EXCERPT_REQUEST: &str = "11000800000080000a0000000000ff00000002000000fd00000004000000fb00000006000000f900000008000000f70000000a000000f50000000c000000f30000000e000000f100000010000000ef00000012000000ed00000014000000eb00000016000000e900000018000000e70000001a000000e50000001c000000e30000001e000000e100000020000000df00000022000000dd00000024000000db00000026000000d900000028000000d70000002a000000d50000002c000000d30000002e000000d100000030000000cf00000032000000cd00000034000000cb00000036000000c900000038000000c70000003a000000c50000003c000000c30000003e000000c1000000";
const EXCERPT_REPLY: &str = "11000800000080000a0000000000fe00000004000000fa00000008000000f60000000c000000f200000010000000ee00000014000000ea00000018000000e60000001c000000e200000020000000de00000024000000da00000028000000d60000002c000000d200000030000000ce00000034000000ca00000038000000c60000003c000000c200000040000000be00000044000000ba00000048000000b60000004c000000b200000050000000ae00000054000000aa00000058000000a60000005c000000a2000000600000009e000000640000009a00000068000000960000006c00000092000000700000008e000000740000008a00000078000000860000007c00000082000000";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn the_committed_excerpt_replays() {
    let (request, reply) = (unhex(EXCERPT_REQUEST), unhex(EXCERPT_REPLY));
    let mut slots = [P4appSlot::<1, 64>::EMPTY; 1];
    let mut sw = P4appSwitch::new(&mut slots);
    sw.reset(2).unwrap();
    let mut out = [0u8; 266];
    assert_eq!(sw.process(1, &request, &mut out), P4appVerdict::Consumed);
    assert_eq!(
        sw.process(0, &request, &mut out),
        P4appVerdict::Multicast { len: 266 }
    );
    assert_same_reply(&out, &reply, "excerpt");
}

/// The tensors a capture's worker reduced, read back from its requests: int32 values as
/// sent; float32 values as sent divided by the scale of the block's reply exponent (the
/// benchmark's inputs are small integers, which come back exactly).
fn inputs_of(
    requests: &BTreeMap<(u8, u32), Vec<u8>>,
    reply_e0: &BTreeMap<(u8, u32), i8>,
    job: u8,
    float: bool,
    workers: u16,
) -> P4appTensorData {
    let packets = requests.range((job, 0)..=(job, u32::MAX)).count() as u32;
    let values = |k: u32| {
        let p = P4appPacket::new_unchecked(&requests[&(job, k)][..]);
        p.values().iter().map(|v| v.get()).collect::<Vec<i32>>()
    };
    if !float {
        return P4appTensorData::I32((0..packets).flat_map(values).collect());
    }
    // packets = blocks + min(M, blocks).
    let blocks = if packets >= 2 * M as u32 {
        packets - M as u32
    } else {
        packets / 2
    };
    let window = blocks.min(M as u32);
    let x = (0..blocks)
        .flat_map(|d| {
            let scale = P4appScale::new(workers, reply_e0[&(job, d)]);
            values(d + window)
                .into_iter()
                .map(move |q| scale.dequantize_value(q))
        })
        .collect();
    P4appTensorData::F32(x)
}

/// A tensor's storage, per worker and job.
#[derive(Debug, Clone)]
enum P4appTensorData {
    I32(Vec<i32>),
    F32(Vec<f32>),
}

/// The original client's outstanding packets in every capture.
const M: usize = 8;

/// Run our workers on the inputs the capture's workers had, against our switch, and
/// compare what they send with what the original client sent, field by field. The
/// exponent of a data-only packet and the payload of an exponent-only packet are whatever
/// the original's buffers held (stale); ours are −126 and zeros, and are not compared.
fn compare_workers(name: &str, file: &[u8], float: bool) {
    let datagrams: Vec<Datagram<'_>> = pcap_frames(file).into_iter().filter_map(udp).collect();
    let mut ranks: Vec<([u8; 6], [u8; 4])> = Vec::new();
    let mut captured: Vec<BTreeMap<(u8, u32), Vec<u8>>> = Vec::new();
    let mut reply_e0 = BTreeMap::new();
    let mut jobs: Vec<u8> = Vec::new();
    for d in &datagrams {
        let p = P4appPacket::new_unchecked(d.payload);
        if d.dst_mac == SWITCH_MAC {
            let rank = match ranks.iter().position(|r| *r == (d.src_mac, d.src_ip)) {
                Some(r) => r,
                None => {
                    ranks.push((d.src_mac, d.src_ip));
                    captured.push(BTreeMap::new());
                    ranks.len() - 1
                }
            };
            if !jobs.contains(&p.job()) {
                jobs.push(p.job());
            }
            // The first copy of each packet; resends repeat it.
            captured[rank]
                .entry((p.job(), p.tsi()))
                .or_insert_with(|| d.payload.to_vec());
        } else {
            reply_e0.insert((p.job(), p.tsi()), p.e0());
        }
    }
    let workers = ranks.len() as u16;
    let mut slots = vec![P4appSlot::<1, 64>::EMPTY; SLOTS];
    let mut sw = P4appSwitch::new(&mut slots);
    sw.reset(workers).unwrap();
    let (mut next_job, mut shift) = (0, 0);
    let mut ours: Vec<BTreeMap<(u8, u32), Vec<u8>>> = vec![BTreeMap::new(); ranks.len()];
    for &job in &jobs {
        let mut tensors: Vec<P4appTensorData> = captured
            .iter()
            .map(|c| inputs_of(c, &reply_e0, job, float, workers))
            .collect();
        let mut ws: Vec<P4appWorker<'_, M>> = tensors
            .iter_mut()
            .map(|t| {
                let mut w =
                    P4appWorker::resume(P4appConfig::new(workers), next_job, shift).unwrap();
                let t = match t {
                    P4appTensorData::I32(t) => P4appTensor::I32(t),
                    P4appTensorData::F32(t) => P4appTensor::F32(t),
                };
                assert_eq!(w.submit(t), Ok(next_job));
                w
            })
            .collect();
        let now = Instant::from_millis(1);
        let (mut buf, mut out) = ([0u8; 266], [0u8; 266]);
        let mut busy = true;
        while busy {
            busy = false;
            for r in 0..ws.len() {
                while let Some(len) = ws[r].poll_transmit(now, &mut buf) {
                    busy = true;
                    let p = P4appPacket::new_unchecked(&buf[..len]);
                    ours[r].insert((p.job(), p.tsi()), buf[..len].to_vec());
                    match sw.process(r as u16, &buf[..len], &mut out) {
                        P4appVerdict::Multicast { len } => ws
                            .iter_mut()
                            .for_each(|w| w.handle_packet(now, &out[..len])),
                        P4appVerdict::Unicast { .. } => unreachable!("no loss here"),
                        P4appVerdict::Consumed | P4appVerdict::Drop(_) => {}
                    }
                }
            }
        }
        assert!(
            ws.iter().all(|w| !w.is_busy()),
            "{name}: job {job} unfinished"
        );
        (next_job, shift) = (ws[0].next_job(), ws[0].shift());
    }
    for (rank, (ours, captured)) in ours.iter().zip(&captured).enumerate() {
        assert_eq!(ours.len(), captured.len(), "{name}: packets of rank {rank}");
        for (key, theirs) in captured {
            let what = format!("{name}: rank {rank} job {} tsi {}", key.0, key.1);
            let mine = ours
                .get(key)
                .unwrap_or_else(|| panic!("{what}: not sent by ours"));
            let parse = |b: &[u8]| P4appRepr::parse(&P4appPacket::new_checked(b).unwrap()).unwrap();
            let (a, b) = (parse(mine), parse(theirs));
            let packets = ours.range((key.0, 0)..=(key.0, u32::MAX)).count() as u32;
            let window = if float {
                packets.min(2 * M as u32) / 2
            } else {
                packets.min(M as u32)
            };
            let blocks = if float { packets - window } else { packets };
            let e0_compared = !float || key.1 < blocks;
            assert_eq!(
                P4appRepr { e0: 0, ..a },
                P4appRepr { e0: 0, ..b },
                "{what}: header"
            );
            if e0_compared && float {
                assert_eq!(a.e0, b.e0, "{what}: exponent");
            }
            if !float || key.1 >= window {
                let values = |x: &[u8]| {
                    let p = P4appPacket::new_unchecked(x);
                    p.values().iter().map(|v| v.get()).collect::<Vec<_>>()
                };
                assert_eq!(values(mine), values(theirs), "{what}: values");
            }
        }
    }
}

fn compare_workers_file(file: &str, float: bool) {
    let Some(dir) = frames_dir() else {
        return;
    };
    let path = dir.join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    compare_workers(file, &bytes, float);
}

#[test]
fn our_worker_sends_what_the_int32_client_sent() {
    compare_workers_file("int32-1worker.pcap", false);
}

#[test]
fn our_worker_sends_what_the_float32_client_sent() {
    compare_workers_file("float32-1worker.pcap", true);
}

#[test]
fn our_workers_send_what_two_float32_clients_sent() {
    compare_workers_file("float32-2workers.pcap", true);
}

#[test]
fn our_workers_send_what_two_lossy_clients_sent() {
    compare_workers_file("int32-2workers-loss1pct.pcap", false);
    compare_workers_file("float32-2workers-loss2pct.pcap", true);
}
