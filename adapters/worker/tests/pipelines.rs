//! `--pipeline`: the daemon serves through the switch asked for. The reference switch takes
//! up to 1,024 values a packet and 256 ranks a job, the P4 model 256 and 64: so a JoinReply
//! says which one answered, and a job of 65 ranks is refused by the model alone. Either
//! answers Status with the counters it really kept.

mod common;

use std::net::UdpSocket;
use std::time::Duration;

use common::doctor::status;
use common::*;
use switchml_core::wire::{JoinRepr, Message};
use switchml_switchd::{JobSpec, RunningSwitch, SwitchConfig};

#[test]
fn each_pipeline_answers_with_its_own_limits_and_counters() {
    let cases = [
        (SwitchPipeline::Reference, 1024, true),
        (SwitchPipeline::P4Model, 256, false),
    ];
    for (pipeline, max_count, takes_65_ranks) in cases {
        let sw = switch(pipeline, 2, 32, 0.0, 0);
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let join = JoinRepr {
            job: JOB,
            rank: 0,
            world: 2,
            slot_lo: 0,
            slot_count: 16,
            count: 64,
            lanes: 2,
            nonce: 0x0123_4567,
            cookie: 0,
            tag: [0; 16],
        }
        .sign(KEY);
        let answer = common::send_join(&s, sw.addr(), join, KEY);
        let Ok(Message::JoinReply(r)) = Message::parse(&answer) else {
            panic!("{pipeline}: not a JoinReply: {answer:02x?}");
        };
        assert_eq!(r.max_count, max_count, "{pipeline}");
        // The Join with its cookie and this Status (with its cookie) were received (the
        // first Join and Status were answered with Cookies, before the switch); the Join
        // counted for the job.
        let c = status(sw.addr(), JOB).counters;
        assert_eq!((c.received, c.joins, c.runs), (2, 1, 1), "{pipeline}");
        let wide = RunningSwitch::start(&SwitchConfig {
            pipeline,
            ..SwitchConfig::new(
                "127.0.0.1:0".parse().unwrap(),
                vec![JobSpec {
                    id: 9,
                    world: 65,
                    slots: 8,
                    key: Some(1),
                }],
            )
        });
        assert_eq!(wide.is_ok(), takes_65_ranks, "{pipeline}");
    }
}

/// A worker left to choose its count from the path (loopback: 1,024) joins the reference
/// switch with it, and the P4 model (256 at most) after that switch refuses it with
/// `CountTooLarge`: every rank retries with 256, and the sums are exact on both.
#[test]
fn a_count_from_the_path_joins_either_switch_with_its_largest() {
    use switchml_worker::config::COUNT_FROM_PATH;
    use switchml_worker::Op;
    for (pipeline, count) in [
        (SwitchPipeline::Reference, 1024),
        (SwitchPipeline::P4Model, 256),
    ] {
        let sw = switch(pipeline, 2, 32, 0.0, 0);
        let len = 10_000;
        let out = per_rank(
            2,
            |rank| {
                config(rank, 2, sw.addr())
                    .into_builder()
                    .count(COUNT_FROM_PATH)
                    .build()
            },
            |comm| {
                let mut data = ints(comm.rank(), 2, len, 7);
                comm.allreduce(&mut data, Op::Sum)
                    .map(|()| (comm.config().count, data))
            },
        );
        for result in out {
            let (chosen, data) = result.expect("connect").expect("all-reduce");
            assert_eq!(chosen, count, "{pipeline}");
            assert_eq!(data, int_sum(2, len, 7), "{pipeline}");
        }
    }
}
