//! The event queue: a binary heap ordered by time, ties broken by insertion order, so two
//! events at the same nanosecond always run in the order they were scheduled (determinism
//! does not depend on the heap's internals).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::clock::Nanos;

struct Scheduled<E> {
    at: Nanos,
    order: u64,
    event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}

impl<E> Eq for Scheduled<E> {}

impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Scheduled<E> {
    /// Reversed: the heap's greatest is the earliest event.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.order).cmp(&(self.at, self.order))
    }
}

/// Events of type `E` waiting for their time.
pub struct EventQueue<E> {
    heap: BinaryHeap<Scheduled<E>>,
    order: u64,
    handled: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            order: 0,
            handled: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedule `event` at `at`.
    pub fn push(&mut self, at: Nanos, event: E) {
        self.order += 1;
        self.heap.push(Scheduled {
            at,
            order: self.order,
            event,
        });
    }

    /// Take the earliest event.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let s = self.heap.pop()?;
        self.handled += 1;
        Some((s.at, s.event))
    }

    /// Return how many events were taken so far.
    pub fn handled(&self) -> u64 {
        self.handled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_time_then_by_insertion() {
        let mut q = EventQueue::default();
        q.push(20, 'c');
        q.push(10, 'a');
        q.push(20, 'd');
        q.push(10, 'b');
        let order: String = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, "abcd");
        assert_eq!(q.handled(), 4);
    }
}
