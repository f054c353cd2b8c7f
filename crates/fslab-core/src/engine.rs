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
///
/// Those write completions interleave a few increasing sequences instead (while the write
/// buffer is full most writes wait milliseconds for a slot, in rising order, while a few
/// complete one command time after another), so an item the FIFO refuses goes to one of
/// `SIDE` more runs if one ends at or below its key, and only else to the heap. Once
/// anything is outside the FIFO (`spilled`), a push takes the run, the FIFO included, whose
/// last key is the largest at or below its own (the best fit, so each sequence keeps its
/// run), and a pop the smallest of all heads. While nothing is (a device completing in
/// order), a push and a pop touch the FIFO alone, as before the side runs.
pub struct KeyQueue<T> {
    /// Items pushed in increasing key order (the common case: a device completing in
    /// submission order) queue here in O(1).
    fifo: Fifo<T>,
    /// `side[..live]` hold items, in decreasing order of their last keys, `tails` (a push
    /// goes to the first that ends at or below its key, which keeps that order); the
    /// others are empty, their buffers kept for reuse.
    side: [Fifo<T>; SIDE],
    tails: [u128; SIDE],
    live: usize,
    heap: Vec<T>,
    /// `heap[0]` is a stale, already-popped item.
    root_vacant: bool,
    /// Something is in a side run or the heap (a vacant root counts until the next pop).
    spilled: bool,
}

/// Runs beside the FIFO (four in all: on an SSD's GC-bound random writes at queue depth
/// 32, fewer left most completions to the heap).
const SIDE: usize = 3;

impl<T> Default for KeyQueue<T> {
    fn default() -> Self {
        KeyQueue {
            fifo: Fifo::default(),
            side: std::array::from_fn(|_| Fifo::default()),
            tails: [0; SIDE],
            live: 0,
            heap: Vec::new(),
            root_vacant: false,
            spilled: false,
        }
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

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo { buf: Vec::new(), head: 0, end: 0 }
    }
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

    /// The first item's key, `u128::MAX` (above every key) when empty.
    #[inline(always)]
    fn head_key(&self) -> u128 {
        self.front().map_or(u128::MAX, |f| f.key())
    }

    /// The last item's key, 0 (at or below every key) when empty.
    #[inline(always)]
    fn last_key(&self) -> u128 {
        let (head, end) = (self.head, self.end);
        // SAFETY: `end - 1` is in `head..end` when the run is not empty.
        if end > head { unsafe { self.buf.get_unchecked(end - 1) }.key() } else { 0 }
    }

    /// Append `ev` if its key is above the last one's; false (nothing changed) otherwise.
    #[inline(always)]
    fn push(&mut self, ev: T) -> bool {
        let (head, end) = (self.head, self.end);
        // SAFETY: `end - 1` is in `head..end` when the run is not empty.
        if end > head && unsafe { self.buf.get_unchecked(end - 1) }.key() > ev.key() {
            return false;
        }
        self.append(ev);
        true
    }

    /// Append `ev` (the caller keeps the keys increasing).
    #[inline(always)]
    fn append(&mut self, ev: T) {
        if self.end == self.buf.len() {
            self.make_room();
        }
        let end = self.end;
        // SAFETY: `make_room` left `end < buf.len()`.
        unsafe { *self.buf.get_unchecked_mut(end) = ev }
        self.end = end + 1;
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
        if !self.spilled && self.fifo.push(ev) {
            return;
        }
        self.push_spilled(ev);
    }

    /// `push` once the FIFO alone does not do: to the best-fitting run, else the heap.
    #[inline(always)]
    fn push_spilled(&mut self, ev: T) {
        self.spilled = true;
        let key = ev.key();
        let live = self.live.min(SIDE);
        // The first live side run that ends at or below `key` (their last keys decrease).
        let tails = &self.tails[..live];
        let r = tails.iter().position(|&t| t <= key).unwrap_or(live);
        let fifo_last = self.fifo.last_key();
        if fifo_last <= key && tails.get(r).is_none_or(|&t| fifo_last >= t) {
            self.fifo.append(ev);
        } else if r < SIDE {
            // A fitting side run, or the first empty one (its key below every live tail).
            self.side[r].append(ev);
            self.tails[r] = key;
            self.live = live.max(r + 1);
        } else if self.root_vacant {
            self.root_vacant = false;
            self.fill_root(ev);
        } else {
            self.heap.push(ev);
            self.sift_up(self.heap.len() - 1, ev);
        }
    }

    #[inline(always)]
    pub fn pop(&mut self) -> Option<T> {
        if !self.spilled {
            return self.fifo.pop_front();
        }
        self.pop_spilled()
    }

    /// Where the smallest item is: the FIFO (`SIDE + 1`, also for an empty queue), side run
    /// `r`, or the heap's root (`SIDE`). Keys are below `u128::MAX` (a tag or an insertion
    /// number never reaches `u64::MAX`), the empty runs' key. The root must not be vacant.
    #[inline(always)]
    fn min_place(&self) -> usize {
        let (mut place, mut best) = (SIDE + 1, self.fifo.head_key());
        for (r, run) in self.side[..self.live.min(SIDE)].iter().enumerate() {
            let k = run.head_key();
            if k < best {
                (place, best) = (r, k);
            }
        }
        if let Some(h) = self.heap.first() {
            if h.key() < best {
                place = SIDE;
            }
        }
        place
    }

    #[inline]
    fn pop_spilled(&mut self) -> Option<T> {
        if self.root_vacant {
            self.close_vacancy();
        }
        let place = self.min_place();
        let item = if place == SIDE {
            self.root_vacant = true;
            self.heap.first().copied()
        } else if let Some(run) = self.side.get_mut(place) {
            let item = run.pop_front();
            if run.len() == 0 {
                self.retire(place);
            }
            item
        } else {
            self.fifo.pop_front()
        };
        if self.live == 0 && self.heap.len() == self.root_vacant as usize {
            // Nothing left outside the FIFO: back to its fast paths.
            self.heap.clear();
            self.root_vacant = false;
            self.spilled = false;
        }
        item
    }

    /// Side run `r` has emptied: move it behind the live runs, which keep their order.
    #[cold]
    fn retire(&mut self, r: usize) {
        let live = self.live;
        self.side[r..live].rotate_left(1);
        self.tails.copy_within(r + 1..live, r);
        self.live = live - 1;
    }

    /// The item `pop` would return, left in place.
    pub fn peek(&mut self) -> Option<T> {
        if self.root_vacant {
            self.close_vacancy();
        }
        match self.min_place() {
            SIDE => self.heap.first().copied(),
            r => self.side.get(r).unwrap_or(&self.fifo).front().copied(),
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.root_vacant as usize
            + self.fifo.len()
            + self.side.iter().map(|r| r.len()).sum::<usize>()
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
    fn interleaved_rising_sequences_pop_in_order_through_runs_and_heap() {
        // A closed loop over k interleaved rising sequences (each pop pushes the next item
        // of a sequence chosen at random), as an SSD's write completions: with k up to the
        // four runs nothing needs the heap, with more some items do. Each pop must be the
        // smallest item outstanding (a sorted reference), and once the queue has drained,
        // in-order pushes are served by the FIFO alone again (`spilled` cleared).
        for k in [1u64, 2, 4, 5, 9] {
            let mut rng = crate::rng::Rng::new(k);
            let mut q: KeyQueue<u128> = KeyQueue::default();
            let mut reference = std::collections::BTreeSet::new();
            let mut next = vec![0u64; k as usize];
            let mut tag = 0u128;
            let mut push = |q: &mut KeyQueue<u128>, reference: &mut std::collections::BTreeSet<u128>, rng: &mut crate::rng::Rng| {
                let s = rng.below(k) as usize;
                // Sequence s's times rise, each at its own pace; the sequences overlap.
                next[s] += 1 + rng.below(1000 * (s as u64 + 1));
                let key = (next[s] as u128) << 64 | tag;
                tag += 1;
                q.push(key);
                reference.insert(key);
            };
            for _ in 0..32 {
                push(&mut q, &mut reference, &mut rng);
            }
            for step in 0..20_000 {
                let want = reference.pop_first();
                assert_eq!(q.pop(), want, "k={k} step {step}");
                push(&mut q, &mut reference, &mut rng);
                assert_eq!(q.len(), 32);
            }
            let mut last = 0;
            while let Some(key) = q.pop() {
                assert_eq!(Some(key), reference.pop_first());
                last = key;
            }
            assert!(q.is_empty() && reference.is_empty());
            // Drained: in-order pushes and pops touch the FIFO alone again.
            for t in 1..100u128 {
                q.push(((last >> 64) + t) << 64);
            }
            assert!(!q.spilled && q.len() == 99);
            assert_eq!(q.pop(), Some(((last >> 64) + 1) << 64));
        }
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
