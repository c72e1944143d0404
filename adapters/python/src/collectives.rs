//! Broadcast and all-gather of raw bytes, built from the switch's one operation, the
//! int32 sum: every rank contributes a vector of zeros except where it owns the bytes
//! (all of it for the broadcast's root, its own stretch for an all-gather), and an int32
//! sum with one non-zero term is that term, exactly. So any dtype moves bit for bit.
//!
//! Each takes two all-reduces: first the lengths (so ranks may bring different sizes, as
//! `all_to_all` with uneven splits and `gather` of ragged pieces need), then the words.
//! The torch backend (`switchml/torch/`) builds gather, scatter, all_to_all and the
//! reductions the switch cannot do on top of these.

use switchml_worker::{Communicator, Error, Op};

/// Bytes in an int32 word.
const WORD: usize = 4;

fn length_of(bytes: &[u8]) -> Result<i32, Error> {
    i32::try_from(bytes.len()).map_err(|_| {
        Error::Config(format!(
            "{} bytes: a broadcast or gather moves at most 2^31-1 bytes per rank",
            bytes.len()
        ))
    })
}

/// Write `bytes` into `words` (native byte order, the last word zero-padded).
fn pack(bytes: &[u8], words: &mut [i32]) {
    for (word, chunk) in words.iter_mut().zip(bytes.chunks(WORD)) {
        let mut b = [0u8; WORD];
        b[..chunk.len()].copy_from_slice(chunk);
        *word = i32::from_ne_bytes(b);
    }
}

/// Read `len` bytes back from `words`.
fn unpack(words: &[i32], len: usize) -> Vec<u8> {
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    bytes.truncate(len);
    bytes
}

/// A length as the sum reported it: never negative (one contributor, others zero).
fn as_len(n: i32) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// Return every rank's `mine`, in rank order.
pub fn allgather(comm: &Communicator, mine: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
    let (world, me) = (usize::from(comm.world_size()), usize::from(comm.rank()));
    let mut lengths = vec![0i32; world];
    lengths[me] = length_of(mine)?;
    comm.allreduce(&mut lengths, Op::Sum)?;
    let lengths: Vec<usize> = lengths.into_iter().map(as_len).collect();
    let starts: Vec<usize> = lengths
        .iter()
        .scan(0, |at, n| {
            let start = *at;
            *at += n.div_ceil(WORD);
            Some(start)
        })
        .collect();
    let total: usize = lengths.iter().map(|n| n.div_ceil(WORD)).sum();
    let mut words = vec![0i32; total];
    if total > 0 {
        let end = starts[me] + lengths[me].div_ceil(WORD);
        pack(mine, &mut words[starts[me]..end]);
        comm.allreduce(&mut words, Op::Sum)?;
    }
    Ok(lengths
        .iter()
        .zip(&starts)
        .map(|(&n, &s)| unpack(&words[s..s + n.div_ceil(WORD)], n))
        .collect())
}

/// Return root's `data` on every rank (`data` is read on the root only).
pub fn broadcast(comm: &Communicator, root: u16, data: &[u8]) -> Result<Vec<u8>, Error> {
    if root >= comm.world_size() {
        return Err(Error::Config(format!(
            "broadcast from rank {root}: the job has ranks 0..{}",
            comm.world_size()
        )));
    }
    let is_root = comm.rank() == root;
    let mut length = [if is_root { length_of(data)? } else { 0 }];
    comm.allreduce(&mut length, Op::Sum)?;
    let len = as_len(length[0]);
    let mut words = vec![0i32; len.div_ceil(WORD)];
    if is_root {
        pack(data, &mut words);
    }
    if !words.is_empty() {
        comm.allreduce(&mut words, Op::Sum)?;
    }
    Ok(unpack(&words, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_through_words_of_any_length() {
        for len in 0..9usize {
            let bytes: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37) | 0x80).collect();
            let mut words = vec![0i32; len.div_ceil(WORD)];
            pack(&bytes, &mut words);
            assert_eq!(unpack(&words, len), bytes);
        }
    }
}
