//! One-pass trace summary (counts, sizes, sequentiality, seeks, latency, tasks) so that
//! analysis keeps up with tens of millions of events a second. Percentiles use the
//! linear interpolation between closest ranks (numpy's default), on the 0-100 scale.

use std::collections::{BTreeMap, HashMap, VecDeque};

use std::hash::{BuildHasherDefault, Hasher};

use super::{EV_COMPLETE, EV_ISSUE, OP_FLUSH, OP_READ, OP_WRITE};

/// Multiply-shift hashing: keys are integers from the kernel, not adversarial input.
#[derive(Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64)
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A request's identity (dev, sector, op), hashed with one multiply instead of one per
/// field: the issue map is touched twice per request, the hottest thing in the pass.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ReqKey(u32, u64, u8);

impl std::hash::Hash for ReqKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.1 ^ ((self.0 as u64) << 40) ^ ((self.2 as u64) << 58));
    }
}

/// Issued, not yet completed requests: open addressing with linear probing and
/// backward-shift deletion (no tombstones, so a table that sees millions of inserts and
/// removals stays as short as the queue), indexed by the high bits of one multiply.
/// A slot is 32 bytes, aligned: (sector, dev/op word with bit 63 = occupied, issue time,
/// further issues of the same key waiting in `extra`).
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    sector: u64,
    devop: u64,
    t: u64,
    dup: u64,
}

const OCCUPIED: u64 = 1 << 63;

fn devop(k: &ReqKey) -> u64 {
    OCCUPIED | ((k.0 as u64) << 8) | k.2 as u64
}

struct Outstanding {
    slots: Vec<Slot>,
    shift: u32,
    len: usize,
}

impl Outstanding {
    fn new() -> Outstanding {
        Outstanding { slots: vec![Slot::default(); 1024], shift: 64 - 10, len: 0 }
    }

    #[inline]
    fn home_of(&self, sector: u64, dop: u64) -> usize {
        ((sector ^ dop.rotate_left(40)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    #[inline]
    fn find(&self, k: &ReqKey) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let d = devop(k);
        let mut i = self.home_of(k.1, d);
        loop {
            let s = &self.slots[i];
            if s.devop == 0 {
                return None;
            }
            if s.sector == k.1 && s.devop == d {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
    }

    fn insert(&mut self, k: ReqKey, t: u64) {
        if (self.len + 1) * 2 > self.slots.len() {
            let grown = vec![Slot::default(); self.slots.len() * 2];
            let old = std::mem::replace(&mut self.slots, grown);
            self.shift -= 1;
            for s in old.into_iter().filter(|s| s.devop != 0) {
                self.place(s);
            }
        }
        self.place(Slot { sector: k.1, devop: devop(&k), t, dup: 0 });
        self.len += 1;
    }

    #[inline]
    fn place(&mut self, s: Slot) {
        let mask = self.slots.len() - 1;
        let mut i = self.home_of(s.sector, s.devop);
        while self.slots[i].devop != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = s;
    }

    fn remove_at(&mut self, mut i: usize) {
        let mask = self.slots.len() - 1;
        self.slots[i] = Slot::default();
        self.len -= 1;
        // shift later members of the cluster back into the hole when their home allows
        let mut j = (i + 1) & mask;
        while self.slots[j].devop != 0 {
            let h = self.home_of(self.slots[j].sector, self.slots[j].devop);
            // move j to i unless h lies cyclically in (i, j]
            let stays = if i <= j { i < h && h <= j } else { i < h || h <= j };
            if !stays {
                self.slots[i] = self.slots[j];
                self.slots[j] = Slot::default();
                i = j;
            }
            j = (j + 1) & mask;
        }
    }
}

/// Request sizes below this many sectors are counted in an array (no hashing).
const SMALL_SIZES: usize = 2048;

/// Slots of the direct-mapped cache of recent data write completions that a FUA twin
/// may repeat (a twin follows its data completion after one flush, so recent is enough).
const TWIN_SLOTS: usize = 1 << 16;

fn slot(k: &(u32, u64, u8)) -> usize {
    let h = (k.1 ^ ((k.0 as u64) << 40) ^ ((k.2 as u64) << 56)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 48) as usize & (TWIN_SLOTS - 1)
}

/// Distribution summary: count, min, max, mean and the asked percentiles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dist {
    pub count: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub pct: Vec<f64>,
}

/// The p-th percentile (fslab's one definition: crate::stats::nearest_rank) of `n`
/// values, given `at(i)`: the value of 0-based rank i in sorted order.
fn pct_sorted_by<F: Fn(u64) -> f64>(n: u64, p: f64, at: F) -> f64 {
    at(crate::stats::nearest_rank(n, p) - 1)
}

/// Summary of values given as a histogram (value -> count).
pub fn dist_from_hist(h: &BTreeMap<u64, u64>, pcts: &[f64]) -> Dist {
    let n: u64 = h.values().sum();
    if n == 0 {
        return Dist::default();
    }
    let cum: Vec<(u64, u64)> = h.iter().scan(0u64, |c, (&v, &k)| { *c += k; Some((*c, v)) }).collect();
    let at = |rank: u64| -> f64 {
        let i = cum.partition_point(|&(c, _)| c <= rank);
        cum[i].1 as f64
    };
    let sum: f64 = h.iter().map(|(&v, &k)| v as f64 * k as f64).sum();
    Dist {
        count: n,
        min: *h.keys().next().unwrap() as f64,
        max: *h.keys().next_back().unwrap() as f64,
        mean: sum / n as f64,
        pct: pcts.iter().map(|&p| pct_sorted_by(n, p, at)).collect(),
    }
}

/// The value of 0-based rank `rank` in sorted order, without moving anything: 16 bits of
/// the value at a time, a histogram pass over the values that share the bits found so
/// far narrows to the bucket holding the rank (at most four passes; fewer when the values
/// span fewer bits, e.g. latencies in ns).
fn radix_select(v: &[u64], min: u64, max: u64, mut rank: usize) -> u64 {
    if min == max {
        return min;
    }
    // only the bits where min and max differ vary among the values
    let top = 64 - (min ^ max).leading_zeros();
    let mut prefix = if top == 64 { 0 } else { min >> top << top }; // shared high bits
    let mut fixed_above = top; // bits at and above this position are known
    let mut hist = vec![0u64; 1 << 16];
    while fixed_above > 0 {
        let width = fixed_above.min(16);
        let shift = fixed_above - width;
        hist.iter_mut().for_each(|h| *h = 0);
        let mask = (1u64 << width) - 1;
        for &x in v {
            // values outside the prefix found so far are not in the bucket
            if fixed_above == 64 || x >> fixed_above == prefix >> fixed_above {
                hist[((x >> shift) & mask) as usize] += 1;
            }
        }
        let mut b = 0;
        while hist[b] as usize <= rank {
            rank -= hist[b] as usize;
            b += 1;
        }
        prefix |= (b as u64) << shift;
        fixed_above = shift;
    }
    prefix
}

/// Summary of raw values (read only; the signature keeps `&mut` for its callers).
pub fn dist_from_values(v: &mut [u64], pcts: &[f64]) -> Dist {
    let n = v.len() as u64;
    if n == 0 {
        return Dist::default();
    }
    // one pass for sum, min and max (an integer sum: exact, and the order of a float sum
    // would change the last bits of the mean)
    let (mut sum, mut min, mut max) = (0u128, u64::MAX, 0u64);
    for &x in v.iter() {
        sum += x as u128;
        min = min.min(x);
        max = max.max(x);
    }
    let pct = pcts
        .iter()
        .map(|&p| radix_select(v, min, max, (crate::stats::nearest_rank(n, p) - 1) as usize) as f64)
        .collect();
    Dist { count: n, min: min as f64, max: max as f64, mean: sum as f64 / n as f64, pct }
}

/// Per-direction (read, write) results.
#[derive(Debug, Default, Clone)]
pub struct Direction {
    pub sizes: FastMap<u64, u64>, // request size in sectors -> requests
    pub size_sorted: Vec<(u64, u64)>, // (bytes, requests) ascending, filled by the bindings
    pub transitions: u64,
    pub sequential: u64,
    pub forward: u64,
    pub seeks: Vec<u64>,
    pub latency_ns: Vec<u64>,
}

#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// completed requests and sectors by op code (read, write, flush, discard, other)
    pub requests: [u64; 5],
    pub sectors: [u64; 5],
    /// completed requests with each flag bit set (bit i -> index i)
    pub flag_counts: [u64; 8],
    pub dirs: [Direction; 2],
    /// comm code -> (data requests, bytes) from issue events
    pub tasks: BTreeMap<u16, (u64, u64)>,
    pub used_issue_events: bool,
}

/// One pass over events in time order. Data requests (sizes, sequentiality, seeks,
/// tasks) are issue events when the trace has any, completions otherwise; counts and
/// latency follow `analyze::match_requests`' rules.
#[allow(clippy::too_many_arguments)]
pub fn summarize(
    time_ns: &[u64], event: &[u8], dev: &[u32], sector: &[u64], nr_sector: &[u32],
    op: &[u8], flags: &[u8], comm: &[u16],
) -> Summary {
    let mut s = Summary::default();
    let data_ev = if event.contains(&EV_ISSUE) { EV_ISSUE } else { EV_COMPLETE };
    s.used_issue_events = data_ev == EV_ISSUE;
    let mut issued = Outstanding::new();
    let mut extra: FastMap<ReqKey, VecDeque<u64>> = FastMap::default();
    let mut small_sizes = vec![[0u64; SMALL_SIZES]; 2];
    // Room for the common case (half the events are a direction's data requests) without
    // regrowing: capacity that is never written costs no memory.
    for d in s.dirs.iter_mut() {
        d.seeks.reserve(time_ns.len() / 2);
        d.latency_ns.reserve(time_ns.len() / 2);
    }
    let mut twins: Vec<Option<(u32, u64, u8)>> = vec![None; TWIN_SLOTS];
    let mut flag_hist = [0u64; 256];
    let mut task_vec: Vec<(u64, u64)> = vec![(0, 0); 1 << 16];
    let mut prev_end: [Option<u64>; 2] = [None, None];
    for i in 0..time_ns.len() {
        let o = op[i];
        let e = event[i];
        let dir = match o { OP_READ => Some(0), OP_WRITE => Some(1), _ => None };
        if e == data_ev && nr_sector[i] > 0 {
            if let Some(d) = dir {
                let nr = nr_sector[i] as u64;
                let dd = &mut s.dirs[d];
                if (nr as usize) < SMALL_SIZES {
                    small_sizes[d][nr as usize] += 1;
                } else {
                    *dd.sizes.entry(nr).or_default() += 1;
                }
                if let Some(pe) = prev_end[d] {
                    dd.transitions += 1;
                    let st = sector[i];
                    dd.sequential += (st == pe) as u64;
                    dd.forward += (st >= pe) as u64;
                    dd.seeks.push(st.abs_diff(pe));
                }
                prev_end[d] = Some(sector[i] + nr);
                let t = &mut task_vec[comm[i] as usize];
                t.0 += 1;
                t.1 += nr * 512;
            }
        }
        let key = ReqKey(dev[i], sector[i], o);
        if e == EV_ISSUE {
            if o != OP_FLUSH {
                match issued.find(&key) {
                    None => issued.insert(key, time_ns[i]),
                    Some(at) => {
                        issued.slots[at].dup += 1;
                        extra.entry(key).or_default().push_back(time_ns[i]);
                    }
                }
            }
        } else if e == EV_COMPLETE {
            let tkey = (dev[i], sector[i], flags[i]);
            if o == OP_WRITE && nr_sector[i] == 0 {
                let sl = slot(&tkey);
                if twins[sl] == Some(tkey) {
                    twins[sl] = None;
                    continue; // second completion of a FUA write
                }
            }
            s.requests[o.min(4) as usize] += 1;
            s.sectors[o.min(4) as usize] += nr_sector[i] as u64;
            flag_hist[flags[i] as usize] += 1;
            if o == OP_WRITE && nr_sector[i] > 0 {
                twins[slot(&tkey)] = Some(tkey);
            }
            if o != OP_FLUSH {
                if let Some(at) = issued.find(&key) {
                    let v = &mut issued.slots[at];
                    let t0 = v.t;
                    if v.dup == 0 {
                        issued.remove_at(at);
                    } else {
                        v.dup -= 1;
                        let q = extra.get_mut(&key).unwrap();
                        v.t = q.pop_front().unwrap();
                        if q.is_empty() {
                            extra.remove(&key);
                        }
                    }
                    if let Some(d) = dir {
                        s.dirs[d].latency_ns.push(time_ns[i].saturating_sub(t0));
                    }
                }
            }
        }
    }
    for (dd, small) in s.dirs.iter_mut().zip(small_sizes.iter()) {
        for (nr, &k) in small.iter().enumerate() {
            if k > 0 {
                *dd.sizes.entry(nr as u64).or_default() += k;
            }
        }
    }
    for (f, &k) in flag_hist.iter().enumerate() {
        for b in 0..8 {
            s.flag_counts[b] += ((f >> b) & 1) as u64 * k;
        }
    }
    for (code, &(r, b)) in task_vec.iter().enumerate().take(u16::MAX as usize) {
        if r > 0 {
            s.tasks.insert(code as u16, (r, b));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outstanding_table_agrees_with_a_hash_map_through_growth_and_removals() {
        // a deterministic pseudo-random mix: inserts (some at colliding sectors) and
        // removals, with up to ~3000 entries at once (the table grows from 1024 slots)
        let mut t = Outstanding::new();
        let mut reference: HashMap<(u32, u64, u8), u64> = HashMap::new();
        let mut x: u64 = 12345;
        for step in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = ReqKey((x % 3) as u32, (x >> 8) % 4096 * 8, (x % 2) as u8);
            let grow = step < 100_000;
            let at = t.find(&k);
            assert_eq!(at.is_some(), reference.contains_key(&(k.0, k.1, k.2)));
            match at {
                None if grow || x % 3 == 0 => {
                    t.insert(k, step);
                    reference.insert((k.0, k.1, k.2), step);
                }
                Some(i) if !grow || x % 4 == 0 => {
                    assert_eq!(t.slots[i].t, reference[&(k.0, k.1, k.2)]);
                    t.remove_at(i);
                    reference.remove(&(k.0, k.1, k.2));
                }
                _ => {}
            }
            assert_eq!(t.len, reference.len());
        }
        for (&(d, s, o), &v) in &reference {
            let i = t.find(&ReqKey(d, s, o)).expect("every entry found");
            assert_eq!(t.slots[i].t, v);
        }
    }

    #[test]
    fn percentiles_taken_in_any_order_match_a_full_sort() {
        let mut v: Vec<u64> = (0..10_001u64).map(|i| (i * 7919) % 10_007).collect();
        let mut sorted = v.clone();
        sorted.sort_unstable();
        let pcts = [99.0, 50.0, 90.0, 50.0, 100.0, 0.0];
        let d = dist_from_values(&mut v, &pcts);
        let n = sorted.len() as u64;
        for (p, got) in pcts.iter().zip(&d.pct) {
            assert_eq!(*got, sorted[(crate::stats::nearest_rank(n, *p) - 1) as usize] as f64);
        }
        assert_eq!(d.min, sorted[0] as f64);
        assert_eq!(d.max, *sorted.last().unwrap() as f64);
        // values over all 64 bits, repeated values, and a single value
        let mut wide: Vec<u64> = vec![u64::MAX, 0, 1 << 63, 5, 5, 5, u64::MAX - 1, 1 << 20, 77];
        let mut sorted = wide.clone();
        sorted.sort_unstable();
        let n = sorted.len() as u64;
        let all: Vec<f64> = (0..=100).map(|p| p as f64).collect();
        let d = dist_from_values(&mut wide, &all);
        for (p, got) in all.iter().zip(&d.pct) {
            assert_eq!(*got, sorted[(crate::stats::nearest_rank(n, *p) - 1) as usize] as f64, "p{p}");
        }
        assert_eq!(dist_from_values(&mut [7, 7, 7], &[50.0]).pct, vec![7.0]);
    }
}
