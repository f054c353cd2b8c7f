//! The discrete-event engine: a time-ordered queue of events. It knows nothing of devices:
//! a model reports a completion or asks to be woken at a time, through the `Ctx` trait,
//! and the replay loop pops events in (time, insertion) order, so equal times resolve
//! deterministically.

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

impl Event {
    /// The order key: time first, then insertion sequence (unique, so the order is total
    /// and any correct priority queue pops the same sequence).
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.time as u128) << 64) | self.seq as u128
    }
}

/// A winner tree (tournament tree) of events on (time, seq).
///
/// Why not a binary heap (`std::collections::BinaryHeap` or our own): replay pops an
/// event and, in a closed loop, the model it hands the event to pushes the next one
/// straight away. In a heap that pair costs a sift whose every step loads the child the
/// previous comparison chose, a chain of dependent loads and branches the data decides.
/// Here each event sits in a fixed leaf and every inner node holds the smaller key of its
/// two children: updating a leaf recomputes the nodes on its path to the root, whose
/// siblings sit at addresses known in advance, so the loads all start at once and only a
/// short chain of compare-and-select remains. A pop leaves its leaf to the next push (the
/// closed loop's pair is one path update); the leaf is emptied only if something other
/// than a push comes next. Keys are unique (insertion sequence), so any correct priority
/// queue pops the same sequence.
#[derive(Default)]
pub struct EventQueue {
    /// `nodes[1]` is the root; inner nodes 1..cap, leaves cap..2 cap: (key, leaf index).
    /// An empty leaf has key `EMPTY`, which every event's key is below.
    nodes: Vec<Node>,
    /// The event in each leaf (stale where the leaf is empty).
    events: Vec<Event>,
    /// Empty leaves.
    free: Vec<u32>,
    len: usize,
    seq: u64,
    /// The root's event was popped; its leaf still holds it until the next push or look.
    root_vacant: bool,
}

#[derive(Clone, Copy, Default)]
struct Node {
    key: u128,
    leaf: u32,
}

const EMPTY: u128 = u128::MAX;
/// Leaves of a new queue (it doubles when full).
const FIRST_CAPACITY: usize = 16;

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    fn capacity(&self) -> usize {
        self.events.len()
    }

    #[inline]
    pub fn push(&mut self, time: Ns, kind: EventKind) {
        self.seq += 1;
        let ev = Event { time, seq: self.seq, kind };
        let leaf = if self.root_vacant {
            self.root_vacant = false;
            self.nodes[1].leaf as usize
        } else {
            match self.free.pop() {
                Some(l) => l as usize,
                None => self.grow(),
            }
        };
        self.len += 1;
        self.events[leaf] = ev;
        self.update(leaf, ev.key());
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if self.root_vacant {
            self.close_vacancy();
        }
        if self.len == 0 {
            return None;
        }
        let top = self.events[self.nodes[1].leaf as usize];
        self.root_vacant = true;
        self.len -= 1;
        Some(top)
    }

    pub fn peek_time(&mut self) -> Option<Ns> {
        if self.root_vacant {
            self.close_vacancy();
        }
        (self.len > 0).then(|| self.events[self.nodes[1].leaf as usize].time)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empty the popped root's leaf.
    #[inline]
    fn close_vacancy(&mut self) {
        self.root_vacant = false;
        let leaf = self.nodes[1].leaf as usize;
        self.free.push(leaf as u32);
        self.update(leaf, EMPTY);
    }

    /// Give `leaf` the key `key` and recompute the nodes on its path to the root.
    #[inline]
    fn update(&mut self, leaf: usize, key: u128) {
        let cap = self.capacity();
        let nodes = &mut self.nodes[..2 * cap];
        let mut i = cap + leaf;
        nodes[i] = Node { key, leaf: leaf as u32 };
        while i > 1 {
            let (a, b) = (nodes[i & !1], nodes[i | 1]);
            i >>= 1;
            nodes[i] = if b.key < a.key { b } else { a };
        }
    }

    /// Double the leaves (all full): returns a free one. Nodes are rebuilt from the leaves.
    #[cold]
    fn grow(&mut self) -> usize {
        let old = self.capacity();
        let cap = (2 * old).max(FIRST_CAPACITY);
        let mut nodes = vec![Node { key: EMPTY, leaf: 0 }; 2 * cap];
        for l in 0..cap {
            nodes[cap + l].leaf = l as u32;
        }
        for l in 0..old {
            nodes[cap + l].key = self.nodes[old + l].key;
        }
        for i in (1..cap).rev() {
            let (a, b) = (nodes[2 * i], nodes[2 * i + 1]);
            nodes[i] = if b.key < a.key { b } else { a };
        }
        self.nodes = nodes;
        self.events.resize(cap, Event { time: 0, seq: 0, kind: EventKind::Wake { token: 0 } });
        // the new leaves, lowest first out
        self.free.extend((old + 1..cap).rev().map(|l| l as u32));
        old
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

    #[test]
    fn matches_a_sorted_reference_under_interleaved_pushes_and_pops() {
        // Mixed pushes and pops (including the pop-then-push pairs of a closed loop and
        // pops with nothing pushed in between) against a sorted list.
        let mut rng = crate::rng::Rng::new(5);
        let mut q = EventQueue::new();
        let mut reference: Vec<(Ns, u64)> = Vec::new();
        let mut token = 0u64;
        let mut now = 0;
        for step in 0..20_000 {
            let pushes = if step % 97 == 0 { 0 } else { rng.below(3) };
            for _ in 0..pushes {
                token += 1;
                let t = now + rng.below(50);
                q.push(t, EventKind::Wake { token });
                reference.push((t, token));
            }
            if step % 13 == 0 {
                reference.sort();
                assert_eq!(q.peek_time(), reference.first().map(|r| r.0));
            }
            for _ in 0..rng.below(3) {
                reference.sort();
                let want = (!reference.is_empty()).then(|| reference.remove(0));
                let got = q.pop().map(|e| match e.kind {
                    EventKind::Wake { token } => (e.time, token),
                    _ => unreachable!(),
                });
                assert_eq!(got, want);
                if let Some((t, _)) = got {
                    now = t;
                }
            }
            assert_eq!(q.len(), reference.len());
        }
    }
}
