//! One rank's record at the switch-to-ring transition, and its encoding: the payload of a
//! Status ring frame (docs/fallback.md), little-endian:
//!
//! ```text
//!  0-7: first unfinished tensor | 8-15: tensors submitted
//!  then the failed tensors and the held tensors, each a count (u32) and that many u64
//! ```

use crate::wire::{Error, Result};

/// The length of the fixed part: the first unfinished tensor and the number submitted.
const FIXED_LEN: usize = 16;
/// The length of a list's count.
const COUNT_LEN: usize = 4;
/// The length of one tensor number.
const TENSOR_LEN: usize = 8;

/// One rank's tensors at the transition, to send (see [`RecordView`] for a received one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The first tensor this rank has not finished through the switch.
    pub first_incomplete: u64,
    /// How many tensors it has submitted.
    pub next: u64,
    /// The submitted tensors, from `first_incomplete` on, that did not finish.
    pub failed: &'a [u64],
    /// The finished tensors whose results it holds.
    pub held: &'a [u64],
}

impl Record<'_> {
    /// Return the length of the encoded record.
    pub fn buffer_len(&self) -> usize {
        FIXED_LEN + 2 * COUNT_LEN + TENSOR_LEN * (self.failed.len() + self.held.len())
    }

    /// Write the record into `buf`; return the bytes written. Refuses a buffer shorter than
    /// [`Record::buffer_len`], and a list longer than a count can say.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let len = self.buffer_len();
        let out = buf.get_mut(..len).ok_or(Error::BufferTooSmall)?;
        out[..8].copy_from_slice(&self.first_incomplete.to_le_bytes());
        out[8..16].copy_from_slice(&self.next.to_le_bytes());
        let mut at = FIXED_LEN;
        for list in [self.failed, self.held] {
            let n = u32::try_from(list.len()).map_err(|_| Error::Field("record.count"))?;
            out[at..at + COUNT_LEN].copy_from_slice(&n.to_le_bytes());
            at += COUNT_LEN;
            for t in list {
                out[at..at + TENSOR_LEN].copy_from_slice(&t.to_le_bytes());
                at += TENSOR_LEN;
            }
        }
        Ok(len)
    }
}

/// A list of tensor numbers in place: little-endian u64s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tensors<'a> {
    bytes: &'a [u8],
}

impl<'a> Tensors<'a> {
    /// Return the number of tensors.
    pub fn len(&self) -> usize {
        self.bytes.len() / TENSOR_LEN
    }

    /// Return whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Return the tensors, in the order the rank listed them.
    pub fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        self.bytes.chunks_exact(TENSOR_LEN).map(|w| {
            let mut b = [0u8; TENSOR_LEN];
            b.copy_from_slice(w);
            u64::from_le_bytes(b)
        })
    }

    /// Return whether `tensor` is in the list.
    pub fn contains(&self, tensor: u64) -> bool {
        self.iter().any(|t| t == tensor)
    }
}

/// A received record, over its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// The first tensor the rank has not finished through the switch.
    pub first_incomplete: u64,
    /// How many tensors it has submitted.
    pub next: u64,
    /// The submitted tensors, from `first_incomplete` on, that did not finish.
    pub failed: Tensors<'a>,
    /// The finished tensors whose results it holds.
    pub held: Tensors<'a>,
}

impl<'a> RecordView<'a> {
    /// Parse a record: the fixed part, then two counted lists, and nothing after them.
    pub fn parse(bytes: &'a [u8]) -> Result<RecordView<'a>> {
        let word = |at: usize| -> Result<u64> {
            let mut b = [0u8; 8];
            b.copy_from_slice(bytes.get(at..at + 8).ok_or(Error::Truncated)?);
            Ok(u64::from_le_bytes(b))
        };
        let (first_incomplete, next) = (word(0)?, word(8)?);
        let mut at = FIXED_LEN;
        let mut list = || -> Result<Tensors<'a>> {
            let count = bytes.get(at..at + COUNT_LEN).ok_or(Error::Truncated)?;
            let n = u32::from_le_bytes([count[0], count[1], count[2], count[3]]);
            at += COUNT_LEN;
            let len = usize::try_from(n)
                .ok()
                .and_then(|n| n.checked_mul(TENSOR_LEN))
                .ok_or(Error::Truncated)?;
            let list = bytes.get(at..).and_then(|b| b.get(..len));
            at += len;
            list.map(|bytes| Tensors { bytes }).ok_or(Error::Truncated)
        };
        let (failed, held) = (list()?, list()?);
        if bytes.len() > at {
            return Err(Error::TrailingBytes);
        }
        Ok(RecordView {
            first_incomplete,
            next,
            failed,
            held,
        })
    }

    /// Return whether the rank finished `tensor` through the switch.
    pub fn finished(&self, tensor: u64) -> bool {
        tensor < self.next && !self.failed.contains(tensor)
    }

    /// Return the last tensor the rank finished + 1 (0 if none).
    pub(super) fn finished_end(&self) -> u64 {
        (0..self.next)
            .rev()
            .find(|&t| self.finished(t))
            .map_or(0, |t| t + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // First unfinished 4 of 9 submitted; 4 and 6 failed; 3 held.
    const BYTES: [u8; 48] = [
        4, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, // first_incomplete, next
        2, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, // failed
        1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, // held
    ];
    const RECORD: Record<'static> = Record {
        first_incomplete: 4,
        next: 9,
        failed: &[4, 6],
        held: &[3],
    };

    fn same(view: &RecordView<'_>, r: &Record<'_>) -> bool {
        (view.first_incomplete, view.next) == (r.first_incomplete, r.next)
            && view.failed.iter().eq(r.failed.iter().copied())
            && view.held.iter().eq(r.held.iter().copied())
    }

    #[test]
    fn decode_known_bytes() {
        let v = RecordView::parse(&BYTES).unwrap();
        assert!(same(&v, &RECORD));
        assert_eq!((v.failed.len(), v.held.len()), (2, 1));
        assert!(v.finished(5) && !v.finished(6) && !v.finished(9));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut buf = [0xAA; 50];
        assert_eq!(RECORD.buffer_len(), 48);
        assert_eq!(RECORD.emit(&mut buf), Ok(48));
        assert_eq!(buf[..48], BYTES);
        assert_eq!(RECORD.emit(&mut buf[..47]), Err(Error::BufferTooSmall));
    }

    #[test]
    fn reject_impossible_lengths() {
        for len in 0..BYTES.len() {
            assert_eq!(
                RecordView::parse(&BYTES[..len]),
                Err(Error::Truncated),
                "{len}"
            );
        }
        let mut long = [0u8; 49];
        long[..48].copy_from_slice(&BYTES);
        assert_eq!(RecordView::parse(&long), Err(Error::TrailingBytes));
        let mut huge = BYTES;
        huge[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(RecordView::parse(&huge), Err(Error::Truncated));
    }

    proptest! {
        #[test]
        fn parse_of_emit_is_identity(
            first_incomplete: u64,
            next: u64,
            failed in proptest::collection::vec(any::<u64>(), 0..8),
            held in proptest::collection::vec(any::<u64>(), 0..8),
        ) {
            let r = Record { first_incomplete, next, failed: &failed, held: &held };
            let mut buf = [0u8; 24 + 8 * 16];
            let n = r.emit(&mut buf).unwrap();
            prop_assert!(same(&RecordView::parse(&buf[..n]).unwrap(), &r));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = RecordView::parse(&bytes);
        }
    }
}
