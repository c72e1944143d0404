//! Timing: back-to-back Contributions of `count` values from every rank of a job, over 16
//! slots in turn, with no stalls (the harness's seed 0): the cycles between two marks over
//! the number of packets is the data path's cycles per packet.

use switchml_core::switch::JobConfig;
use switchml_core::wire::{JoinRepr, Message};

use crate::session::Session;

/// The job timed: 16 slots, `world` ranks.
fn job(world: u16) -> JobConfig {
    JobConfig {
        id: 1,
        world,
        slot_lo: 0,
        slot_count: 16,
        key: 1,
    }
}

/// A session whose script joins `world` ranks, marks, sends `uses` uses of each of 16
/// slots from every rank (`count` values each), and marks again.
pub fn contributions<const K: usize>(count: u16, world: u16, uses: u32) -> Session<K> {
    let c = job(world);
    let mut s = Session::<K>::new(1, &[c], 0);
    for rank in 0..world {
        let join = Message::Join(
            JoinRepr {
                job: 1,
                rank,
                world,
                slot_lo: 0,
                slot_count: 16,
                lanes: 1,
                // The Join's chunk size must be 1 or more, even for a timing of priming chunks.
                count: count.max(1),
                nonce: 100 + u32::from(rank),
                cookie: 0,
                tag: [0; 16],
            }
            .sign(1),
        );
        let mut b = vec![0u8; join.buffer_len()];
        let _ = join.emit(&mut b);
        s.packet(&b);
    }
    let session = s.reference().job(1).map_or(0, |j| j.session());
    assert_ne!(session, 0, "the timed job's run is open");
    s.mark();
    for seq in 0..uses {
        for slot in 0..16u16 {
            for rank in 0..world {
                let mut p = vec![1, 1, 0, 1];
                p.extend(rank.to_be_bytes());
                p.extend(slot.to_be_bytes());
                p.extend([(seq & 1) as u8, 0]);
                p.extend(count.to_be_bytes());
                p.extend(seq.to_be_bytes());
                p.extend([130, 0, 0, 0]);
                p.extend(session.to_be_bytes());
                for i in 0..u32::from(count) {
                    p.extend((i as i32 - i32::from(rank)).to_be_bytes());
                }
                s.packet(&p);
            }
        }
    }
    s.mark();
    s
}
