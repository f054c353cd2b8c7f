//! Issued, not yet completed requests, matched to their completions first in, first out
//! per (dev, sector, op). Most devices complete requests about in the order they were
//! issued, so the requests wait in a queue in issue order, and a completion looks at the
//! oldest few: no hash, no probe, and the memory touched moves along in order. When a
//! completion's request is not among the oldest few (a deep queue completed out of
//! order, or requests whose completion never comes), the queue moves into a hash table,
//! which serves until it is empty again.

use std::collections::VecDeque;

use super::summary::{FastMap, Outstanding, ReqKey};

/// A queued request: sector, (dev << 8 | op) + 1 (0 once it completed out of turn), issue time.
#[derive(Clone, Copy, Default)]
struct Queued {
    sector: u64,
    devop: u64,
    t: u64,
}

/// Room in the queue (24 KiB: it stays in the first-level cache).
const QUEUE_SLOTS: usize = 1024;
/// A completion looks this far into the queue before the queue moves into the table.
const LOOK_AHEAD: usize = 8;

/// A queue slot's `devop` is 0 unless it holds a request still in flight, so the look at
/// the head needs no test that the queue is empty. While the table is in use, `head` is
/// 1 and `tail` 0: the test for room in the queue fails, and slot 1 is empty.
pub struct Inflight {
    queue: Box<[Queued; QUEUE_SLOTS]>,
    // positions count up without wrapping; a position's slot is its low bits
    head: usize,
    tail: usize,
    /// the table is in use (the queue is empty) until it empties
    hashed: bool,
    table: Outstanding,
    /// further issues of a key the table holds, oldest first
    extra: FastMap<ReqKey, VecDeque<u64>>,
}

impl Inflight {
    pub fn new() -> Inflight {
        Inflight {
            queue: Box::new([Queued::default(); QUEUE_SLOTS]),
            head: 0,
            tail: 0,
            hashed: false,
            table: Outstanding::new(),
            extra: FastMap::default(),
        }
    }

    /// A request `k` issued at `t`.
    #[inline(always)]
    pub fn issue(&mut self, k: ReqKey, t: u64) {
        if self.tail.wrapping_sub(self.head) < QUEUE_SLOTS {
            self.queue[self.tail % QUEUE_SLOTS] = Queued { sector: k.1, devop: k.devop(), t };
            self.tail += 1;
        } else if self.hashed {
            self.table_issue(&k, t);
        } else {
            self.queue_full(k.1, k.devop(), t);
        }
    }

    /// The key comes in two words, not by reference: a reference would make the caller
    /// store it in memory on every event.
    #[cold]
    #[inline(never)]
    fn queue_full(&mut self, sector: u64, devop: u64, t: u64) {
        self.move_queue_to_table();
        self.table_issue(&ReqKey::from_parts(sector, devop), t);
    }

    /// The issue time of the oldest request `k` not yet completed, which is now complete.
    #[inline(always)]
    pub fn complete(&mut self, k: ReqKey) -> Option<u64> {
        let q = &mut self.queue[self.head % QUEUE_SLOTS];
        if q.sector == k.1 && q.devop == k.devop() {
            q.devop = 0;
            self.head += 1;
            return Some(q.t);
        }
        if self.hashed {
            return self.table_complete(&k);
        }
        if self.head == self.tail {
            return None; // nothing queued: a trace of completions only takes this path
        }
        self.queue_miss(k.1, k.devop())
    }

    /// A completion whose request is not at the head of the queue: one of the next few,
    /// or none queued, or else the queue moves into the table.
    #[cold]
    #[inline(never)]
    fn queue_miss(&mut self, sector: u64, d: u64) -> Option<u64> {
        // requests that completed out of turn leave gaps at the head
        while self.head != self.tail && self.queue[self.head % QUEUE_SLOTS].devop == 0 {
            self.head += 1;
        }
        let end = self.tail.min(self.head + LOOK_AHEAD);
        for at in self.head..end {
            let q = &mut self.queue[at % QUEUE_SLOTS];
            if q.sector == sector && q.devop == d {
                q.devop = 0;
                let t = q.t;
                if at == self.head {
                    self.head += 1;
                }
                return Some(t);
            }
        }
        if end == self.tail {
            return None; // looked at every queued request
        }
        self.move_queue_to_table();
        self.table_complete(&ReqKey::from_parts(sector, d))
    }

    #[inline(always)]
    fn table_issue(&mut self, k: &ReqKey, t: u64) {
        match self.table.entry(k) {
            Err(free) => self.table.fill(free, k, t),
            Ok(at) => self.table_issue_again(at, k, t),
        }
    }

    /// A request issued while one of the same key is in the table.
    #[cold]
    fn table_issue_again(&mut self, at: usize, k: &ReqKey, t: u64) {
        self.table.slots[at].dup += 1;
        self.extra.entry(*k).or_default().push_back(t);
    }

    #[inline(always)]
    fn table_complete(&mut self, k: &ReqKey) -> Option<u64> {
        let at = self.table.find(k)?;
        let v = &mut self.table.slots[at];
        let t0 = v.t;
        if v.dup == 0 {
            self.table.remove_at(at);
            if self.table.len == 0 {
                // back to the queue
                (self.head, self.tail, self.hashed) = (0, 0, false);
            }
        } else {
            self.table_complete_again(at, k);
        }
        Some(t0)
    }

    /// The slot at `at` takes the next issue of its key.
    #[cold]
    fn table_complete_again(&mut self, at: usize, k: &ReqKey) {
        let v = &mut self.table.slots[at];
        v.dup -= 1;
        let q = self.extra.get_mut(k).unwrap();
        v.t = q.pop_front().unwrap();
        if q.is_empty() {
            self.extra.remove(k);
        }
    }

    /// Move the queued requests, in issue order, into the table.
    fn move_queue_to_table(&mut self) {
        for at in self.head..self.tail {
            let q = std::mem::take(&mut self.queue[at % QUEUE_SLOTS]);
            if q.devop != 0 {
                self.table_issue(&ReqKey::from_parts(q.sector, q.devop), q.t);
            }
        }
        (self.head, self.tail, self.hashed) = (1, 0, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn matches_a_fifo_per_key_in_order_out_of_order_and_never_completed() {
        // Phases of in-order completions, deep shuffled queues, re-issues of a key still
        // in flight and requests that never complete: the queue, the table and the moves
        // between them must all give each completion its key's oldest issue.
        let mut f = Inflight::new();
        let mut reference: HashMap<(u32, u64, u8), VecDeque<u64>> = HashMap::new();
        let mut flight: Vec<ReqKey> = Vec::new();
        let mut x: u64 = 99;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut hashed_seen, mut queued_after_hashed) = (false, false);
        for step in 0..300_000u64 {
            // 0 in order, 1 shuffled, 2 deeper than the queue; at the end 3: some lost
            let phase = if step < 240_000 { step / 20_000 % 3 } else { 3 };
            if step % 20_000 == 0 {
                for k in flight.drain(..) {
                    let want = reference.get_mut(&(k.0, k.1, k.2)).and_then(|q| q.pop_front());
                    assert_eq!(f.complete(k), want, "drain at {step}");
                }
            }
            let depth = [40, 100, 1500, 60][phase as usize];
            let r = next();
            if flight.len() < depth && r % 2 == 0 {
                let sector = if r % 7 == 0 && !flight.is_empty() { flight[0].1 } else { (r >> 8) % 100_000 };
                let k = ReqKey((r >> 40) as u32 % 3, sector, (r >> 50) as u8 % 4);
                f.issue(k, step);
                reference.entry((k.0, k.1, k.2)).or_default().push_back(step);
                flight.push(k);
            } else if !flight.is_empty() {
                let pick = match phase { 0 => 0, 3 => (r as usize >> 3) % flight.len().min(3), _ => (r as usize >> 3) % flight.len() };
                let k = flight.remove(pick);
                if phase == 3 && r % 11 == 0 {
                    continue; // never completes
                }
                let want = reference.get_mut(&(k.0, k.1, k.2)).and_then(|q| q.pop_front());
                assert_eq!(f.complete(k), want, "step {step}");
                if r % 5 == 0 {
                    assert_eq!(f.complete(ReqKey(9, r, 1)), None, "a key never issued");
                }
            }
            hashed_seen |= f.hashed;
            queued_after_hashed |= hashed_seen && !f.hashed && f.tail > f.head;
            assert_eq!(f.hashed, (f.head, f.tail) == (1, 0));
        }
        assert!(hashed_seen && queued_after_hashed, "both ways and back");
    }
}
