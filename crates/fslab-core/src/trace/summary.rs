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
        Outstanding { slots: vec![Slot::default(); 4096], shift: 64 - 12, len: 0 }
    }

    #[inline]
    fn home_of(&self, sector: u64, dop: u64) -> usize {
        ((sector ^ dop.rotate_left(40)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The slot at `i`, an index from `home_of` or masked by `slots.len() - 1`.
    #[inline(always)]
    fn slot_at(&self, i: usize) -> &Slot {
        debug_assert!(i < self.slots.len());
        // SAFETY: `home_of` keeps the top `64 - shift` bits of a u64, below
        // `2^(64 - shift) == slots.len()` (the table is that power of two in length,
        // `grow` doubles it and lowers `shift` together); probes are masked by len - 1.
        unsafe { self.slots.get_unchecked(i) }
    }

    #[inline]
    fn find(&self, k: &ReqKey) -> Option<usize> {
        self.probe(k).ok()
    }

    /// Where `k` is (Ok) or, if absent, the free slot its probe sequence ends at (Err).
    #[inline]
    fn probe(&self, k: &ReqKey) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let d = devop(k);
        let mut i = self.home_of(k.1, d);
        loop {
            let s = self.slot_at(i);
            if s.devop == 0 {
                return Err(i);
            }
            if s.sector == k.1 && s.devop == d {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
    }

    #[cfg(test)]
    fn insert(&mut self, k: ReqKey, t: u64) {
        if let Err(at) = self.entry(&k) {
            self.fill(at, &k, t);
        }
    }

    /// Where `k` is (Ok) or, if absent, the free slot it would take (Err): one probe
    /// sequence for the issue path's look-up and insertion. Grows the table first when
    /// one more entry would fill it over half.
    #[inline]
    fn entry(&mut self, k: &ReqKey) -> Result<usize, usize> {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        self.probe(k)
    }

    /// Put `k` with issue time `t` in the free slot `at` that `entry` returned.
    #[inline]
    fn fill(&mut self, at: usize, k: &ReqKey, t: u64) {
        self.slots[at] = Slot { sector: k.1, devop: devop(k), t, dup: 0 };
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self) {
        let grown = vec![Slot::default(); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, grown);
        self.shift -= 1;
        for s in old.into_iter().filter(|s| s.devop != 0) {
            self.place(s);
        }
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

/// A twin-cache entry in 16 bytes: (sector, bit 63 = occupied | dev << 8 | flags); an
/// empty slot is all zeros. Half the size of an `Option<(u32, u64, u8)>`, so the cache
/// (touched at a random slot by every data write completion) takes half the cache lines.
#[inline]
fn twin_entry(k: &(u32, u64, u8)) -> [u64; 2] {
    [k.1, 1 << 63 | (k.0 as u64) << 8 | k.2 as u64]
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

/// The values of 0-based ranks `ranks` in sorted order, without moving anything: 16 bits
/// of the value at a time, a histogram pass over the values that share the bits found so
/// far narrows each rank to the bucket holding it (at most four passes; fewer when the
/// values span fewer bits, e.g. latencies in ns). Every rank is narrowed in the same
/// passes (one histogram per rank, filled from one read of the values), so asking for
/// three percentiles reads the values as often as asking for one.
fn radix_select<T: Copy + Into<u64>>(v: &[T], min: u64, max: u64, ranks: &[usize]) -> Vec<u64> {
    if min == max {
        return vec![min; ranks.len()];
    }
    // only the bits where min and max differ vary among the values
    let top = 64 - (min ^ max).leading_zeros();
    let shared = if top == 64 { 0 } else { min >> top << top }; // shared high bits
    let mut prefix = vec![shared; ranks.len()];
    let mut left: Vec<usize> = ranks.to_vec();
    let mut fixed_above = top; // bits at and above this position are known
    let mut hists = vec![vec![0u64; 1 << 16]; ranks.len()];
    while fixed_above > 0 {
        let width = fixed_above.min(16);
        let shift = fixed_above - width;
        let mask = (1u64 << width) - 1;
        // ranks whose bucket so far is the same share one histogram (the first of them)
        let owner: Vec<usize> = (0..ranks.len())
            .map(|r| (0..r).find(|&q| prefix[q] == prefix[r]).unwrap_or(r))
            .collect();
        let distinct: Vec<usize> = (0..ranks.len()).filter(|&r| owner[r] == r).collect();
        for &r in &distinct {
            hists[r][..=mask as usize].iter_mut().for_each(|h| *h = 0);
        }
        if fixed_above == 64 {
            // nothing known yet: every value is in the one bucket
            let h = &mut hists[distinct[0]];
            for &x in v {
                let x: u64 = x.into();
                h[((x >> shift) & mask) as usize] += 1;
            }
        } else if distinct.len() == 1 {
            let want = prefix[distinct[0]] >> fixed_above;
            let h = &mut hists[distinct[0]];
            for &x in v {
                let x: u64 = x.into();
                // values outside the prefix found so far are not in the bucket
                if x >> fixed_above == want {
                    h[((x >> shift) & mask) as usize] += 1;
                }
            }
        } else {
            // Most values are in none of the buckets: test all (up to four at once) with
            // one branch. An impossible prefix pads the group (x >> fixed_above < 2^63).
            for group in distinct.chunks(4) {
                let mut wants = [u64::MAX; 4];
                for (w, &r) in wants.iter_mut().zip(group) {
                    *w = prefix[r] >> fixed_above;
                }
                for &x in v {
                    let x: u64 = x.into();
                    let hi = x >> fixed_above;
                    if (hi == wants[0]) | (hi == wants[1]) | (hi == wants[2]) | (hi == wants[3]) {
                        let r = group[wants.iter().position(|&w| w == hi).unwrap_or(0)];
                        hists[r][((x >> shift) & mask) as usize] += 1;
                    }
                }
            }
        }
        for r in 0..ranks.len() {
            let h = &hists[owner[r]];
            let mut b = 0;
            while h[b] as usize <= left[r] {
                left[r] -= h[b] as usize;
                b += 1;
            }
            prefix[r] |= (b as u64) << shift;
        }
        fixed_above = shift;
    }
    prefix
}

/// Summary of raw values (read only, in any order).
pub fn dist_from_values<T: Copy + Into<u64>>(v: &[T], pcts: &[f64]) -> Dist {
    // one pass for sum, min and max (an integer sum: exact, and the order of a float sum
    // would change the last bits of the mean)
    let (mut sum, mut min, mut max) = (0u128, u64::MAX, 0u64);
    for &x in v.iter() {
        let x: u64 = x.into();
        sum += x as u128;
        min = min.min(x);
        max = max.max(x);
    }
    dist_known(v, min, max, sum, pcts)
}

/// Summary of values whose min, max and sum are known.
fn dist_known<T: Copy + Into<u64>>(v: &[T], min: u64, max: u64, sum: u128, pcts: &[f64]) -> Dist {
    let n = v.len() as u64;
    if n == 0 {
        return Dist::default();
    }
    let ranks: Vec<usize> = pcts.iter().map(|&p| (crate::stats::nearest_rank(n, p) - 1) as usize).collect();
    let pct = radix_select(v, min, max, &ranks).into_iter().map(|x| x as f64).collect();
    Dist { count: n, min: min as f64, max: max as f64, mean: sum as f64 / n as f64, pct }
}

/// Values kept for exact percentiles (seek distances, latencies): 32 bits each while
/// every value fits, which halves the memory the pass fills and the traffic of the passes
/// that summarise it; 64 bits each from the first value that does not fit. Their min, max
/// and sum are kept as they come, so summarising them needs no pass of its own.
#[derive(Debug, Clone)]
pub struct Values {
    kept: Kept,
    min: u64,
    max: u64,
    sum: u128,
}

#[derive(Debug, Clone)]
enum Kept {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Default for Values {
    fn default() -> Self {
        Values { kept: Kept::Narrow(Vec::new()), min: u64::MAX, max: 0, sum: 0 }
    }
}

impl Values {
    #[inline]
    pub fn push(&mut self, x: u64) {
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        self.sum += x as u128;
        match &mut self.kept {
            Kept::Narrow(v) if x <= u32::MAX as u64 => v.push(x as u32),
            Kept::Narrow(_) => self.widen_and_push(x),
            Kept::Wide(v) => v.push(x),
        }
    }

    #[cold]
    fn widen_and_push(&mut self, x: u64) {
        if let Kept::Narrow(v) = &self.kept {
            let mut wide: Vec<u64> = Vec::with_capacity(v.capacity().max(v.len() + 1));
            wide.extend(v.iter().map(|&x| x as u64));
            wide.push(x);
            self.kept = Kept::Wide(wide);
        }
    }

    /// Room for `n` more values, in huge pages where the kernel offers them (tens of MB
    /// filled once: a fault per 2 MiB instead of per 4 KiB).
    pub fn reserve(&mut self, n: usize) {
        match &mut self.kept {
            Kept::Narrow(v) => {
                v.reserve(n);
                crate::mem::huge_pages(v.spare_capacity_mut());
            }
            Kept::Wide(v) => {
                v.reserve(n);
                crate::mem::huge_pages(v.spare_capacity_mut());
            }
        }
    }

    pub fn len(&self) -> usize {
        match &self.kept {
            Kept::Narrow(v) => v.len(),
            Kept::Wide(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_narrow(&self) -> bool {
        matches!(self.kept, Kept::Narrow(_))
    }

    /// Count, min, max, mean and the percentiles `pcts` of the values.
    pub fn dist(&self, pcts: &[f64]) -> Dist {
        match &self.kept {
            Kept::Narrow(v) => dist_known(v, self.min, self.max, self.sum, pcts),
            Kept::Wide(v) => dist_known(v, self.min, self.max, self.sum, pcts),
        }
    }
}

/// Per-direction (read, write) results.
#[derive(Debug, Default, Clone)]
pub struct Direction {
    pub sizes: FastMap<u64, u64>, // request size in sectors -> requests
    pub size_sorted: Vec<(u64, u64)>, // (bytes, requests) ascending, filled by the bindings
    pub transitions: u64,
    pub sequential: u64,
    pub forward: u64,
    pub seeks: Values,
    pub latency_ns: Values,
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
    let n = time_ns.len();
    let cols = Columns {
        time_ns, event: &event[..n], dev: &dev[..n], sector: &sector[..n], nr_sector: &nr_sector[..n],
        op: &op[..n], flags: &flags[..n], comm: &comm[..n],
    };
    // The twin cache is only ever read at an empty write completion: a trace without
    // one (no FUA, no empty preflush) needs none of its stores.
    if has_empty_write_completion(cols.event, cols.op, cols.nr_sector) {
        summarize_with::<true>(&cols)
    } else {
        summarize_with::<false>(&cols)
    }
}

/// The columns `summarize` reads, all of one length (checked once, so the loop's
/// indexing needs no bounds checks of its own).
struct Columns<'a> {
    time_ns: &'a [u64],
    event: &'a [u8],
    dev: &'a [u32],
    sector: &'a [u64],
    nr_sector: &'a [u32],
    op: &'a [u8],
    flags: &'a [u8],
    comm: &'a [u16],
}

/// Whether any event is a write completion of no sectors (a FUA twin or an empty
/// preflush), a block at a time without branches inside the block (vectorised): first
/// whether the block has an event of no sectors at all (one column), only then which.
fn has_empty_write_completion(event: &[u8], op: &[u8], nr_sector: &[u32]) -> bool {
    const BLOCK: usize = 4096;
    event.chunks(BLOCK).zip(op.chunks(BLOCK)).zip(nr_sector.chunks(BLOCK)).any(|((e, o), nr)| {
        nr.iter().fold(false, |acc, &nr| acc | (nr == 0))
            && e.iter().zip(o).zip(nr).any(|((&e, &o), &nr)| e == EV_COMPLETE && o == OP_WRITE && nr == 0)
    })
}

fn summarize_with<const TWINS: bool>(c: &Columns) -> Summary {
    let Columns { time_ns, event, dev, sector, nr_sector, op, flags, comm } = *c;
    let n = time_ns.len();
    let mut s = Summary::default();
    let data_ev = if event.contains(&EV_ISSUE) { EV_ISSUE } else { EV_COMPLETE };
    s.used_issue_events = data_ev == EV_ISSUE;
    let mut issued = Outstanding::new();
    let mut extra: FastMap<ReqKey, VecDeque<u64>> = FastMap::default();
    let mut small_sizes = vec![[0u64; SMALL_SIZES]; 2];
    // Room for the common case (half the events are a direction's data requests) without
    // regrowing: capacity that is never written costs no memory.
    for d in s.dirs.iter_mut() {
        d.seeks.reserve(n / 2);
        d.latency_ns.reserve(n / 2);
    }
    let mut twins: Vec<[u64; 2]> = if TWINS { vec![[0, 0]; TWIN_SLOTS] } else { Vec::new() };
    let mut flag_hist = [0u64; 256];
    // indexed by a u16: no bounds checks
    let mut task_vec: Box<[(u64, u64); 1 << 16]> = vec![(0, 0); 1 << 16].try_into().unwrap();
    let mut prev_end: [Option<u64>; 2] = [None, None];
    for i in 0..n {
        let o = op[i];
        let e = event[i];
        let nr = nr_sector[i];
        let dir = match o { OP_READ => Some(0), OP_WRITE => Some(1), _ => None };
        if e == data_ev && nr > 0 {
            if let Some(d) = dir {
                let nr = nr as u64;
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
                match issued.entry(&key) {
                    Err(free) => issued.fill(free, &key, time_ns[i]),
                    Ok(at) => {
                        issued.slots[at].dup += 1;
                        extra.entry(key).or_default().push_back(time_ns[i]);
                    }
                }
            }
        } else if e == EV_COMPLETE {
            if TWINS && o == OP_WRITE {
                let twin = (dev[i], sector[i], flags[i]);
                let tkey = twin_entry(&twin);
                let sl = &mut twins[slot(&twin)];
                if nr == 0 {
                    if *sl == tkey {
                        *sl = [0, 0];
                        continue; // second completion of a FUA write
                    }
                } else {
                    *sl = tkey;
                }
            }
            s.requests[o.min(4) as usize] += 1;
            s.sectors[o.min(4) as usize] += nr as u64;
            flag_hist[flags[i] as usize] += 1;
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
        // removals, with up to ~3000 entries at once (the table grows from 4096 slots)
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
    fn values_widen_at_the_first_that_does_not_fit_and_summarise_alike() {
        let all: Vec<u64> = vec![9, 3, u32::MAX as u64, 1 << 40, 3, 12, u64::MAX, 0, 77];
        let mut kept = Values::default();
        kept.reserve(4);
        for (i, &x) in all.iter().enumerate() {
            kept.push(x);
            let wide = !kept.is_narrow();
            assert_eq!(wide, i >= 3, "after {x}");
            assert_eq!(kept.len(), i + 1);
        }
        let pcts = [0.0, 10.0, 50.0, 90.0, 99.0, 100.0];
        assert_eq!(kept.dist(&pcts), dist_from_values(&all, &pcts));
        let narrow: Vec<u64> = all[..3].to_vec();
        let mut kept = Values::default();
        narrow.iter().for_each(|&x| kept.push(x));
        assert!(kept.is_narrow());
        assert_eq!(kept.dist(&pcts), dist_from_values(&narrow, &pcts));
    }

    #[test]
    fn percentiles_taken_in_any_order_match_a_full_sort() {
        let mut v: Vec<u64> = (0..10_001u64).map(|i| (i * 7919) % 10_007).collect();
        let mut sorted = v.clone();
        sorted.sort_unstable();
        let pcts = [99.0, 50.0, 90.0, 50.0, 100.0, 0.0];
        let d = dist_from_values(&v, &pcts);
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
        let d = dist_from_values(&wide, &all);
        for (p, got) in all.iter().zip(&d.pct) {
            assert_eq!(*got, sorted[(crate::stats::nearest_rank(n, *p) - 1) as usize] as f64, "p{p}");
        }
        assert_eq!(dist_from_values(&[7u64, 7, 7], &[50.0]).pct, vec![7.0]);
    }
}
