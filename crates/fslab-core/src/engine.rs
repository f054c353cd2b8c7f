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

/// What a `KeyQueue` orders by: a unique key, so the order is total and any correct
/// priority queue pops the same sequence.
pub trait Keyed: Copy + Default {
    fn key(&self) -> u128;
}

impl Keyed for Event {
    /// Time first, then insertion sequence.
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.time as u128) << 64) | self.seq as u128
    }
}

impl Default for Event {
    fn default() -> Self {
        Event { time: 0, seq: 0, kind: EventKind::Arrival { index: 0 } }
    }
}

/// A bare key is its own order (a replay that needs no more than a time and a tag packs
/// them in one, `time << 64 | tag`).
impl Keyed for u128 {
    #[inline(always)]
    fn key(&self) -> u128 {
        *self
    }
}

/// A binary min-heap of items on their key (events on (time, seq)).
///
/// Why not `std::collections::BinaryHeap`: replay pops an event and, in a closed loop,
/// the model it hands the event to pushes the next one straight away. Here a pop leaves
/// the root slot vacant and the next push drops into it, so that pair costs one sift
/// (down, Floyd's way: the smaller child moves up to the bottom, then the new event sifts
/// up a little, which is cheap because new events are usually the latest). The vacancy
/// is filled by the last element only if something other than a push comes next.
///
/// In front of the heap sits a FIFO for events pushed in increasing (time, seq) order: a
/// device that completes in submission order (an SSD's reads, whose host link serialises
/// them) then never touches the heap, and a pop takes the smaller of the two heads. The
/// pop order is the same as the heap's alone, since (time, seq) is a total order. (Letting
/// the FIFO take events a few places before its end, sorted in, did not pay, neither one
/// place at a time nor by a binary search and a block move: an SSD's write completions,
/// released by the write buffer as programs end, are further out of order than that, and
/// the moves cost more than the heap's sift.)
pub struct KeyQueue<T> {
    /// Items pushed in increasing key order (the common case: a device completing in
    /// submission order) queue here in O(1); the others go to the heap.
    fifo: Fifo<T>,
    heap: Vec<T>,
    /// `heap[0]` is a stale, already-popped item.
    root_vacant: bool,
}

impl<T> Default for KeyQueue<T> {
    fn default() -> Self {
        KeyQueue { fifo: Fifo { buf: Vec::new(), head: 0, end: 0 }, heap: Vec::new(), root_vacant: false }
    }
}

/// The engine's queue: events in (time, insertion) order.
#[derive(Default)]
pub struct EventQueue {
    q: KeyQueue<Event>,
    seq: u64,
}

/// Items in increasing key order in `buf[head..end]`: popped at the head, pushed at the
/// end. A linear buffer moved back to the front now and then (when it runs out at the end)
/// costs fewer instructions than a ring's wrap-around.
struct Fifo<T> {
    buf: Vec<T>,
    head: usize,
    end: usize,
}

impl<T: Keyed> Fifo<T> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.end - self.head
    }

    #[inline(always)]
    fn front(&self) -> Option<&T> {
        // SAFETY: `head < end <= buf.len()`.
        (self.head < self.end).then(|| unsafe { self.buf.get_unchecked(self.head) })
    }

    #[inline(always)]
    fn pop_front(&mut self) -> Option<T> {
        let ev = *self.front()?;
        self.head += 1;
        if self.head == self.end {
            // Empty: start again at the front, so the buffer seldom needs compacting.
            (self.head, self.end) = (0, 0);
        }
        Some(ev)
    }

    /// Append `ev` if its key is above the last one's; false (nothing changed) otherwise.
    #[inline(always)]
    fn push(&mut self, ev: T) -> bool {
        let (head, end) = (self.head, self.end);
        // SAFETY: `end - 1` is in `head..end` when the run is not empty.
        if end > head && unsafe { self.buf.get_unchecked(end - 1) }.key() > ev.key() {
            return false;
        }
        if end == self.buf.len() {
            self.make_room();
        }
        let end = self.end;
        // SAFETY: `make_room` left `end < buf.len()`.
        unsafe { *self.buf.get_unchecked_mut(end) = ev }
        self.end = end + 1;
        true
    }

    /// Leave `end < buf.len()`: move the run to the front if that frees half the buffer,
    /// else grow it.
    #[cold]
    fn make_room(&mut self) {
        let len = self.len();
        if self.head > 0 && len <= self.buf.len() / 2 {
            self.buf.copy_within(self.head..self.end, 0);
        } else {
            let mut buf = Vec::with_capacity((2 * self.buf.len()).max(256));
            buf.extend_from_slice(&self.buf[self.head..self.end]);
            buf.resize(buf.capacity(), T::default());
            self.buf = buf;
        }
        (self.head, self.end) = (0, len);
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline(always)]
    pub fn push(&mut self, time: Ns, kind: EventKind) {
        self.seq += 1;
        self.q.push(Event { time, seq: self.seq, kind });
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        self.q.pop()
    }

    pub fn peek_time(&mut self) -> Option<Ns> {
        self.q.peek().map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Keyed> KeyQueue<T> {
    #[inline(always)]
    pub fn push(&mut self, ev: T) {
        if self.fifo.push(ev) {
            return;
        }
        if self.root_vacant {
            self.root_vacant = false;
            self.fill_root(ev);
        } else {
            self.heap.push(ev);
            self.sift_up(self.heap.len() - 1, ev);
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        if self.root_vacant {
            self.close_vacancy();
        }
        match (self.heap.first(), self.fifo.front()) {
            (Some(h), Some(f)) if f.key() < h.key() => self.fifo.pop_front(),
            (Some(&h), _) => {
                self.root_vacant = true;
                Some(h)
            }
            (None, _) => self.fifo.pop_front(),
        }
    }

    /// The item `pop` would return, left in place.
    pub fn peek(&mut self) -> Option<T> {
        if self.root_vacant {
            self.close_vacancy();
        }
        match (self.heap.first(), self.fifo.front()) {
            (Some(h), Some(f)) => Some(if f.key() < h.key() { *f } else { *h }),
            (h, f) => h.or(f).copied(),
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.root_vacant as usize + self.fifo.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Move the last item into the vacant root.
    #[inline]
    fn close_vacancy(&mut self) {
        self.root_vacant = false;
        let last = self.heap.pop().expect("a vacant root implies a non-empty heap");
        if !self.heap.is_empty() {
            self.fill_root(last);
        }
    }

    /// Put `ev` in place of `heap[0]` (whose content is discarded) and restore the order.
    #[inline]
    fn fill_root(&mut self, ev: T) {
        let h = &mut self.heap[..];
        let n = h.len();
        let mut hole = 0;
        let mut child = 1;
        // (Slicing the pair of children checks both bounds at once.)
        while let Some(pair) = h.get(child..child + 2) {
            let right = (pair[1].key() < pair[0].key()) as usize;
            let up = pair[right];
            h[hole] = up;
            hole = child + right;
            child = 2 * hole + 1;
        }
        if child + 1 == n {
            h[hole] = h[child];
            hole = child;
        }
        self.sift_up(hole, ev);
    }

    /// Place `ev` at `hole` or above it.
    #[inline]
    fn sift_up(&mut self, mut hole: usize, ev: T) {
        let h = &mut self.heap[..];
        let key = ev.key();
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if key >= h[parent].key() {
                break;
            }
            h[hole] = h[parent];
            hole = parent;
        }
        h[hole] = ev;
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
    fn mixes_in_order_and_backward_pushes() {
        // Each block is pushed backwards, so its first event goes to the FIFO and the
        // rest to the heap, whose root the FIFO's head must beat; equal times keep their
        // insertion order.
        let mut q = EventQueue::new();
        let mut want = Vec::new();
        let mut token = 0;
        for block in 0..20u64 {
            let len = 1 + block * 7 % 60;
            for k in (0..len).rev() {
                token += 1;
                let t = 1000 * block + 10 * k + token % 3;
                q.push(t, EventKind::Wake { token });
                want.push((t, token));
            }
        }
        want.sort();
        let got: Vec<(Ns, u64)> = std::iter::from_fn(|| q.pop())
            .map(|e| match e.kind {
                EventKind::Wake { token } => (e.time, token),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(got, want);
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
