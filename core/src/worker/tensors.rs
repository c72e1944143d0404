//! The queue of submitted tensors: a ring of `QUEUE` entries indexed by tensor id; and the
//! block exponents of a tensor's chunks, from its exponent cache or scanned when sent.

use super::event::{TensorError, TensorId};
use super::NonFinitePolicy;
use crate::quant::{ElementType, NonFinite, Op, Tensor};

/// What the submitter vouches for about a tensor's elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vouched {
    /// Nothing: check them, in one pass with the exponents where the tensor has a cache.
    Nothing,
    /// They are finite; the exponents are scanned chunk by chunk as sent.
    Finite,
    /// They are finite and the tensor's exponent cache holds its chunks' exponents.
    Scanned,
}

/// Make what a submission needs of `buf`'s elements: refuse a non-finite one if `policy`
/// says so and the caller did not vouch for it, and return whether its exponent cache holds
/// the block exponents of its `chunks` chunks of `count` (a float tensor whose cache has
/// room for them all). A tensor that holds a NaN or ∞ and is not refused gets no cached
/// exponents (the fused scan stops at the first): its chunks are scanned as sent, where
/// the exponent ignores non-finite values.
pub(crate) fn scan_exponents<B: Tensor>(
    buf: &mut B,
    chunks: u32,
    count: u16,
    vouched: Vouched,
    policy: NonFinitePolicy,
) -> Result<bool, NonFinite> {
    let (elements, cache) = buf.elements_and_exponents();
    let cache = cache
        .filter(|_| elements.element_type() != ElementType::I32)
        .and_then(|c| c.get_mut(..chunks as usize));
    let refuse = policy == NonFinitePolicy::Refuse;
    match (vouched, cache) {
        (Vouched::Nothing, Some(cache)) => {
            match elements.finite_block_exponents(usize::from(count), cache) {
                Ok(()) => Ok(true),
                Err(e) if refuse => Err(e),
                Err(_) => Ok(false),
            }
        }
        (Vouched::Nothing, None) if refuse => elements.check_finite().map(|()| false),
        (Vouched::Nothing | Vouched::Finite, _) => Ok(false),
        (Vouched::Scanned, cache) => Ok(cache.is_some()),
    }
}

/// One submitted tensor.
pub(crate) struct Entry<B> {
    pub(crate) id: TensorId,
    pub(crate) buf: B,
    pub(crate) len: usize,
    pub(crate) element: ElementType,
    pub(crate) op: Op,
    /// Number of chunks.
    pub(crate) chunks: u32,
    /// Lane slot of chunk 0 (protocol.md §6).
    pub(crate) rotation: u16,
    /// Chunks whose result has not arrived.
    pub(crate) remaining: u32,
    /// The first overflowed element, if any (int32: the first element of the first
    /// chunk the switch flagged).
    pub(crate) overflow: Option<usize>,
    /// Whether `buf`'s exponent cache holds the block exponent of every chunk.
    pub(crate) cached: bool,
    /// Whether its elements are known finite (scanned whole, or refused otherwise): its
    /// chunks take the quantization's fast path, which looks for no NaN or ±∞.
    pub(crate) finite: bool,
}

impl<B: Tensor> Entry<B> {
    /// Return the first chunk of this tensor on lane slot `slot`, if it has one.
    pub(crate) fn first_chunk(&self, slot: u16, window: u16) -> Option<u32> {
        let j =
            (u32::from(slot) + u32::from(window) - u32::from(self.rotation)) % u32::from(window);
        (j < self.chunks).then_some(j)
    }

    /// Return the element range of chunk `j`.
    pub(crate) fn chunk_range(&self, j: u32, count: u16) -> core::ops::Range<usize> {
        let lo = (j as usize)
            .saturating_mul(usize::from(count))
            .min(self.len);
        lo..lo.saturating_add(usize::from(count)).min(self.len)
    }

    /// Return the block exponent of chunk `j`: from the tensor's exponent cache if it holds
    /// them, else scanned now.
    pub(crate) fn chunk_exponent(&mut self, j: u32, count: u16) -> u8 {
        let range = self.chunk_range(j, count);
        let (elements, cache) = self.buf.elements_and_exponents();
        match cache
            .filter(|_| self.cached)
            .and_then(|c| c.get(j as usize))
        {
            Some(&exp) => exp,
            None => elements.block_exponent(range),
        }
    }

    pub(crate) fn is_float(&self) -> bool {
        self.element != ElementType::I32
    }

    pub(crate) fn result(&self) -> Result<(), TensorError> {
        match self.overflow {
            Some(index) => Err(TensorError::Overflow {
                index,
                element: self.element,
            }),
            None => Ok(()),
        }
    }
}

/// The ring. Tensor `id` lives at `id % QUEUE`.
pub(crate) struct Queue<B, const QUEUE: usize> {
    entries: [Option<Entry<B>>; QUEUE],
    /// The id the next submission gets.
    pub(crate) next_id: u64,
    /// Lane slot of chunk 0 of the next submission.
    pub(crate) next_rotation: u16,
}

impl<B: Tensor, const QUEUE: usize> Queue<B, QUEUE> {
    pub(crate) fn new() -> Self {
        Queue {
            entries: [const { None }; QUEUE],
            next_id: 0,
            next_rotation: 0,
        }
    }

    fn index(id: u64) -> usize {
        (id % QUEUE.max(1) as u64) as usize
    }

    pub(crate) fn has_room(&self) -> bool {
        self.entries
            .get(Self::index(self.next_id))
            .is_some_and(|e| e.is_none())
    }

    pub(crate) fn insert(&mut self, entry: Entry<B>) {
        if let Some(e) = self.entries.get_mut(Self::index(entry.id.0)) {
            *e = Some(entry);
        }
    }

    pub(crate) fn get(&self, id: u64) -> Option<&Entry<B>> {
        self.entries
            .get(Self::index(id))?
            .as_ref()
            .filter(|e| e.id.0 == id)
    }

    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut Entry<B>> {
        self.entries
            .get_mut(Self::index(id))?
            .as_mut()
            .filter(|e| e.id.0 == id)
    }

    /// Remove and return the oldest entry that `pick` accepts.
    pub(crate) fn take_oldest(&mut self, pick: impl Fn(&Entry<B>) -> bool) -> Option<Entry<B>> {
        let i = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().filter(|e| pick(e)).map(|e| (e.id, i)))
            .min()?
            .1;
        self.entries[i].take()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.iter().all(|e| e.is_none())
    }
}
