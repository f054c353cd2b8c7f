//! The discrete-event engine: a time-ordered queue of events. It knows nothing of devices:
//! a model reports a completion or asks to be woken at a time, through the `Ctx` trait,
//! and the replay loop pops events in (time, insertion) order, so equal times resolve
//! deterministically.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::request::Ns;

/// What a model may ask of whoever drives it (the engine, or a RAID layer above it).
pub trait Ctx {
    /// Request `tag` completes at `at` (never earlier than the current time).
    fn complete(&mut self, tag: u64, at: Ns);
    /// Call the model's `wake(token)` at time `at`.
    fn wake_at(&mut self, at: Ns, token: u64);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Completion { tag: u64 },
    Wake { token: u64 },
    Arrival { index: u64 },
}

#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub time: Ns,
    seq: u64,
    pub kind: EventKind,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    // Reversed so the max-heap pops the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Event>,
    seq: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, time: Ns, kind: EventKind) {
        self.seq += 1;
        self.heap.push(Event { time, seq: self.seq, kind });
    }

    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }

    pub fn peek_time(&self) -> Option<Ns> {
        self.heap.peek().map(|e| e.time)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

impl Ctx for EventQueue {
    #[inline]
    fn complete(&mut self, tag: u64, at: Ns) {
        self.push(at, EventKind::Completion { tag });
    }
    #[inline]
    fn wake_at(&mut self, at: Ns, token: u64) {
        self.push(at, EventKind::Wake { token });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(20, EventKind::Wake { token: 1 });
        q.push(10, EventKind::Wake { token: 2 });
        q.push(20, EventKind::Wake { token: 3 });
        let order: Vec<(Ns, EventKind)> = std::iter::from_fn(|| q.pop().map(|e| (e.time, e.kind))).collect();
        assert_eq!(
            order,
            vec![(10, EventKind::Wake { token: 2 }), (20, EventKind::Wake { token: 1 }), (20, EventKind::Wake { token: 3 })]
        );
    }
}
