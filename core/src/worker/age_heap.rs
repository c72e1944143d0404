//! An indexed min-heap of a lane's slots by the age of their current use (protocol.md
//! §6.3), so that the congestion window finds the oldest held use, and whether a use is
//! the lane's oldest incomplete one, in O(log s) rather than by a scan of every slot.
//!
//! The heap keeps slot indices only, 4 bytes a slot (a lane of the simulator has 4,096,
//! and a worker is built on the stack); each operation is given the ages (`age(j)`: slot
//! `j`'s current use's). A slot's age must not change while it is in the heap: the worker
//! takes a slot out before it gives the slot another use.

/// A use's place in the order every rank shares: tensor, chunk, a priming use first.
pub(crate) type Age = (u64, u32, u8);

/// A set of slots ordered by age (then by slot), the oldest on top.
#[derive(Debug, Clone)]
pub(crate) struct AgeHeap<const N: usize> {
    /// The heap: `heap[..len]` are slot indices, each no younger than its children.
    heap: [u16; N],
    /// Where slot `j` is in `heap`, or `ABSENT`.
    pos: [u16; N],
    len: u16,
}

const ABSENT: u16 = u16::MAX;

impl<const N: usize> AgeHeap<N> {
    pub(crate) const fn new() -> Self {
        AgeHeap {
            heap: [0; N],
            pos: [ABSENT; N],
            len: 0,
        }
    }

    /// Return the slot with the oldest use, if any.
    pub(crate) fn oldest(&self) -> Option<usize> {
        (self.len > 0).then(|| usize::from(self.heap[0]))
    }

    /// Return whether slot `j` is in the set.
    pub(crate) fn contains(&self, j: usize) -> bool {
        self.pos.get(j).is_some_and(|&p| p != ABSENT)
    }

    /// Put slot `j` in the set (nothing if it is in already or out of range).
    pub(crate) fn insert(&mut self, j: usize, age: impl Fn(usize) -> Age) {
        if j >= N || self.contains(j) || usize::from(self.len) >= N {
            return;
        }
        let at = usize::from(self.len);
        self.heap[at] = j as u16;
        self.pos[j] = at as u16;
        self.len += 1;
        self.sift_up(at, &age);
    }

    /// Take slot `j` out of the set (nothing if it is not in it).
    pub(crate) fn remove(&mut self, j: usize, age: impl Fn(usize) -> Age) {
        if !self.contains(j) {
            return;
        }
        let at = usize::from(self.pos[j]);
        let last = usize::from(self.len) - 1;
        self.swap(at, last);
        self.len -= 1;
        self.pos[j] = ABSENT;
        if at < last {
            self.sift_down(at, &age);
            self.sift_up(at, &age);
        }
    }

    /// The order of the entry at `at`: its age, then its slot (ages are unique in a
    /// worker, one slot per chunk; the slot makes the order total anyway).
    fn key(&self, at: usize, age: &impl Fn(usize) -> Age) -> (Age, u16) {
        let j = self.heap[at];
        (age(usize::from(j)), j)
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.pos[usize::from(self.heap[a])] = a as u16;
        self.pos[usize::from(self.heap[b])] = b as u16;
    }

    fn sift_up(&mut self, mut at: usize, age: &impl Fn(usize) -> Age) {
        while at > 0 {
            let parent = (at - 1) / 2;
            if self.key(at, age) >= self.key(parent, age) {
                break;
            }
            self.swap(at, parent);
            at = parent;
        }
    }

    fn sift_down(&mut self, mut at: usize, age: &impl Fn(usize) -> Age) {
        let len = usize::from(self.len);
        loop {
            let (l, r) = (2 * at + 1, 2 * at + 2);
            let mut least = at;
            if l < len && self.key(l, age) < self.key(least, age) {
                least = l;
            }
            if r < len && self.key(r, age) < self.key(least, age) {
                least = r;
            }
            if least == at {
                break;
            }
            self.swap(at, least);
            at = least;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every insertion and removal order keeps the oldest on top (ties by slot index).
    #[test]
    fn the_oldest_is_on_top_through_any_insertions_and_removals() {
        let ages: [Age; 9] = [
            (2, 0, 1),
            (1, 5, 0),
            (1, 5, 1),
            (3, 0, 0),
            (1, 2, 1),
            (0, 9, 0),
            (2, 0, 0),
            (1, 2, 0),
            (4, 4, 4),
        ];
        let age = |j: usize| ages[j];
        let oldest_of = |set: &[usize]| set.iter().copied().min_by_key(|&j| (ages[j], j));
        let mut rng = crate::splitmix::SplitMix64::new(7);
        let mut heap = AgeHeap::<9>::new();
        let mut set = heapless::Vec::<usize, 9>::new();
        for _ in 0..2000 {
            let j = (rng.next_u64() % 9) as usize;
            if rng.next_u64() % 2 == 0 {
                heap.insert(j, age);
                if !set.contains(&j) {
                    set.push(j).unwrap();
                }
            } else {
                heap.remove(j, age);
                set.retain(|&k| k != j);
            }
            assert_eq!(heap.oldest(), oldest_of(&set));
            assert_eq!(usize::from(heap.len), set.len());
            for k in 0..9 {
                assert_eq!(heap.contains(k), set.contains(&k));
            }
        }
        assert!(!heap.contains(99));
        heap.insert(99, age);
        heap.remove(99, age);
        assert_eq!(heap.oldest(), oldest_of(&set));
    }
}
