//! Parsing and emitting messages.
//!
//! The switch parses the header of every Contribution it receives and emits the header of
//! every Result; workers do the converse, and the control messages go through
//! [`Message`]. This measures those four paths: a Contribution header parsed and emitted on
//! its own (the data path), and one of each message type parsed and emitted through
//! [`Message`] (the control path).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use switchml_core::wire::{
    AbortReason, AbortRepr, DataKind, DataPacket, DataRepr, Flags, JoinFlags, JoinReplyRepr,
    JoinRepr, LeaveRepr, Message, ProbeReplyRepr, ProbeRepr, SlotState, StatusCounters,
    StatusFlags, StatusReplyRepr, StatusRepr,
};

/// Values per Contribution.
const K: u16 = 256;

const DATA: DataRepr = DataRepr {
    kind: DataKind::Contribution,
    job: 7,
    rank: 3,
    slot: 5,
    ver: 1,
    flags: Flags::RETRANSMIT,
    count: K,
    seq: 9,
    exp: 130,
    session: 0x0A0B_0C0D,
};

/// One message of every type, emitted.
fn messages() -> Vec<Vec<u8>> {
    let values = vec![0u8; 4 * usize::from(K)];
    let bitmap = [0xFF, 0x03];
    let msgs = [
        Message::Data(DATA, &values),
        Message::Join(
            JoinRepr {
                job: 7,
                rank: 3,
                world: 10,
                slot_lo: 8,
                slot_count: 4,
                count: K,
                lanes: 3,
                nonce: 0x0102_0304,
                cookie: 0,
                tag: [0; 16],
            }
            .sign(0x1122_3344_5566_7788),
        ),
        Message::JoinReply(JoinReplyRepr {
            job: 7,
            rank: 3,
            world: 10,
            flags: JoinFlags::COMPLETE,
            shards: 0,
            max_count: 1024,
            epoch: 1,
            slot_count: 16,
            session: 0x0A0B_0C0D,
            nonce: 0x0102_0304,
            lane_slots: 4,
            count: K,
            joined: &bitmap,
        }),
        Message::Probe(ProbeRepr {
            job: 7,
            rank: 3,
            slot: 5,
            ver: 1,
            seq: 9,
            session: 0x0A0B_0C0D,
            flags: switchml_core::wire::ProbeFlags::NONE,
        }),
        Message::ProbeReply(ProbeReplyRepr {
            job: 7,
            rank: 3,
            slot: 5,
            ver: 1,
            state: SlotState::Collecting,
            remaining: 2,
            seq: 9,
            epoch: 1,
            world: 10,
            session: 0x0A0B_0C0D,
            seen: &bitmap,
        }),
        Message::Abort(AbortRepr {
            job: 7,
            rank: 3,
            reason: AbortReason::WorkerFailed,
            detail: 4,
            epoch: 1,
            session: 0x0A0B_0C0D,
        }),
        Message::Status(StatusRepr {
            job: 7,
            rank: 0,
            nonce: 1,
            cookie: 0,
            tag: [0; 16],
        }),
        Message::StatusReply(StatusReplyRepr {
            job: 7,
            rank: 0,
            world: 10,
            flags: StatusFlags::ALL_JOINED,
            shards: 0,
            slot_count: 16,
            epoch: 1,
            counters: StatusCounters::default(),
            joined: &bitmap,
        }),
        Message::Leave(LeaveRepr {
            job: 7,
            rank: 3,
            session: 0x0A0B_0C0D,
        }),
    ];
    msgs.iter()
        .map(|m| {
            let mut b = vec![0u8; m.buffer_len()];
            m.emit(&mut b).unwrap();
            b
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let wire = messages();
    let contribution = &wire[0];
    let mut group = c.benchmark_group("wire");
    group.throughput(Throughput::Elements(1));
    group.bench_function("parse contribution header", |b| {
        b.iter(|| {
            let p = DataPacket::new_unchecked(black_box(&contribution[..]));
            DataRepr::parse(&p)
        });
    });
    let mut out = vec![0u8; contribution.len()];
    group.bench_function("emit contribution header", |b| {
        b.iter(|| {
            black_box(DATA).emit(&mut DataPacket::new_unchecked(&mut out[..]));
            black_box(&mut out);
        });
    });
    group.throughput(Throughput::Elements(wire.len() as u64));
    group.bench_function("parse one of each type", |b| {
        b.iter(|| {
            for m in black_box(&wire) {
                black_box(Message::parse(m).unwrap());
            }
        });
    });
    let parsed: Vec<Message> = wire.iter().map(|m| Message::parse(m).unwrap()).collect();
    let mut out = vec![0u8; 2048];
    group.bench_function("emit one of each type", |b| {
        b.iter(|| {
            for m in black_box(&parsed) {
                black_box(m.emit(&mut out).unwrap());
            }
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
