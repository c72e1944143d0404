//! Real-looking traffic to replay: the datagrams a rank's lane sends for one int32 and one
//! f32 tensor — its Join, priming and data Contributions, Leave — recorded from the core's
//! worker state machine, the code every communicator lane runs, with the lane configuration
//! a communicator would give it, while a stand-in switch echoes each Contribution back as
//! its Result. The recording is in a session the attacker made up and carries a key that is
//! not the job's: an off-path attacker has neither.

use switchml_core::quant::{Elements, Op, Tensor};
use switchml_core::time::Instant;
use switchml_core::wire::{
    self, DataKind, DataRepr, JoinFlags, JoinReplyRepr, Message, MessageType, RANK_ALL,
};
use switchml_core::worker::Worker;
use switchml_worker::CommConfig;

use super::forge::bytes_of;
use super::{floats, ints};

/// A tensor of either type.
enum Buf {
    I32(Vec<i32>),
    F32(Vec<f32>),
}

impl Tensor for Buf {
    fn elements(&mut self) -> Elements<'_> {
        match self {
            Buf::I32(v) => Elements::I32(v),
            Buf::F32(v) => Elements::F32(v),
        }
    }
}

/// Record what lane `lane` of a communicator set up as `config` sends for an int32 and an
/// f32 tensor of `len` elements each, in run `session`, with `key` for the job's key.
pub fn lane_stream(
    config: &CommConfig,
    lane: u16,
    session: u32,
    key: u64,
    len: usize,
) -> Vec<Vec<u8>> {
    let mut core = config.lane(lane, session);
    core.key = key;
    let mut w: Box<Worker<Buf, 64, 4>> = Box::new(Worker::new(core).expect("lane config"));
    let now = Instant::from_millis(0);
    let mut buf = vec![0u8; core.max_datagram()];
    let mut sent = Vec::new();
    let joined = vec![0xFFu8; usize::from(config.world).div_ceil(8)];
    let reply = JoinReplyRepr {
        job: config.job,
        rank: RANK_ALL,
        world: config.world,
        flags: JoinFlags::COMPLETE,
        // A shard per lane: every lane is the first of its shard and ends with a Leave.
        shards: config.lanes as u8,
        max_count: 1024,
        epoch: 1,
        slot_count: config.lanes * config.window,
        session,
        // The recording lane's nonce is the session: it opened the run.
        nonce: session,
        lane_slots: config.window,
        count: config.count,
        joined: &joined,
    };
    while let Some(n) = w.poll_transmit(now, &mut buf) {
        sent.push(buf[..n].to_vec());
    }
    w.handle_packet(now, &bytes_of(&Message::JoinReply(reply)));
    let rank = config.rank;
    for tensor in [
        Buf::I32(ints(rank, config.world, len, 1)),
        Buf::F32(floats(rank, len, 1)),
    ] {
        if w.submit(now, tensor, Op::Sum).is_err() {
            panic!("the recording lane refused a tensor");
        }
    }
    // Each round: send what the worker sends, then answer each Contribution with itself.
    for _ in 0..10_000 {
        let mut results = Vec::new();
        while let Some(n) = w.poll_transmit(now, &mut buf) {
            let datagram = &buf[..n];
            sent.push(datagram.to_vec());
            if let Ok(Message::Data(repr, values)) = Message::parse(datagram) {
                let result = DataRepr {
                    kind: DataKind::Result,
                    rank: RANK_ALL,
                    ..repr
                };
                results.push(bytes_of(&Message::Data(result, values)));
            }
        }
        while w.poll_event().is_some() {}
        if results.is_empty() && w.is_idle() {
            break;
        }
        for r in &results {
            w.handle_packet(now, r);
        }
    }
    assert!(w.is_idle(), "the recording never finished");
    w.leave();
    while let Some(n) = w.poll_transmit(now, &mut buf) {
        sent.push(buf[..n].to_vec());
    }
    let kinds = |t: MessageType| {
        sent.iter()
            .filter(|d| wire::peek(d).is_ok_and(|(k, _, _)| k == t))
            .count()
    };
    assert!(kinds(MessageType::Contribution) > 0 && kinds(MessageType::Leave) == 1);
    sent
}
