//! One-pass trace summary (counts, sizes, sequentiality, seeks, latency, tasks) so that
//! analysis keeps up with tens of millions of events a second. Percentiles use the
//! linear interpolation between closest ranks (numpy's default), on the 0-100 scale.

use std::collections::{BTreeMap, HashMap};

use std::hash::{BuildHasherDefault, Hasher};

use super::inflight::Inflight;
use super::{EV_COMPLETE, EV_ISSUE, OP_FLUSH, OP_READ, OP_WRITE};

// The pass takes an op code of a data request as its direction's index.
const _: () = assert!(OP_READ == 0 && OP_WRITE == 1);

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
/// field: the table of requests in flight is touched twice per request when in use.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct ReqKey(pub(super) u32, pub(super) u64, pub(super) u8);

impl ReqKey {
    /// (dev << 8 | op) + 1: at most 2^40, never 0 (the mark of an empty slot); no 64-bit
    /// constant to keep in a register.
    #[inline(always)]
    pub(super) fn devop(&self) -> u64 {
        (((self.0 as u64) << 8) | self.2 as u64) + 1
    }

    /// The key of a sector and a `devop` word.
    pub(super) fn from_parts(sector: u64, devop: u64) -> ReqKey {
        ReqKey(((devop - 1) >> 8) as u32, sector, (devop - 1) as u8)
    }
}

impl std::hash::Hash for ReqKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.1 ^ ((self.0 as u64) << 40) ^ ((self.2 as u64) << 58));
    }
}

/// Issued, not yet completed requests (the table behind `Inflight`'s queue, used when
/// completions come out of order): open addressing with linear probing and
/// backward-shift deletion (no tombstones, so a table that sees millions of inserts and
/// removals stays as short as the queue), indexed by the high bits of one multiply.
/// A slot is 32 bytes, aligned: (sector, dev/op word, never 0 in a used slot, issue time,
/// further issues of the same key waiting in `extra`).
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
pub(super) struct Slot {
    sector: u64,
    devop: u64,
    pub(super) t: u64,
    pub(super) dup: u64,
}

pub(super) struct Outstanding {
    pub(super) slots: Vec<Slot>,
    shift: u32,
    pub(super) len: usize,
}

impl Outstanding {
    pub(super) fn new() -> Outstanding {
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
    pub(super) fn find(&self, k: &ReqKey) -> Option<usize> {
        self.probe(k).ok()
    }

    /// Where `k` is (Ok) or, if absent, the free slot its probe sequence ends at (Err).
    #[inline]
    fn probe(&self, k: &ReqKey) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let d = k.devop();
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
    pub(super) fn entry(&mut self, k: &ReqKey) -> Result<usize, usize> {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        self.probe(k)
    }

    /// Put `k` with issue time `t` in the free slot `at` that `entry` returned.
    #[inline]
    pub(super) fn fill(&mut self, at: usize, k: &ReqKey, t: u64) {
        self.slots[at] = Slot { sector: k.1, devop: k.devop(), t, dup: 0 };
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

    pub(super) fn remove_at(&mut self, mut i: usize) {
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

/// The values of 0-based ranks `ranks` in sorted order, in two reads of the values when
/// the ranks' buckets are small (the usual case): a histogram of the top 16 varying bits
/// (no test per value: every value has the shared bits above them) places each rank in
/// a bucket; a second read copies the values of those few buckets aside, where a
/// selection finds each rank. When those buckets hold over an eighth of the values (a
/// distribution piled on a few values, with outliers far off), `radix_select` narrows
/// in place instead of copying.
fn select_ranks<T: Kept>(v: &[T], min: u64, max: u64, ranks: &[usize]) -> Vec<u64> {
    if min == max {
        return vec![min; ranks.len()];
    }
    let top = 64 - (min ^ max).leading_zeros();
    if v.len() > u32::MAX as usize {
        return radix_select(v, min, max, ranks); // counts beyond 32 bits
    }
    let width = top.min(16);
    let shift = top - width;
    let mask = (1u64 << width) - 1;
    let bucket = |x: u64| ((x >> shift) & mask) as usize;
    // two histograms, even and odd values: runs of one bucket (values piled on one
    // value) then do not wait on their own last increment
    let mut h = vec![[0u32; 2]; 1 << width];
    let mut pairs = v.chunks_exact(2);
    for p in &mut pairs {
        h[bucket(p[0].into())][0] += 1;
        h[bucket(p[1].into())][1] += 1;
    }
    for &x in pairs.remainder() {
        h[bucket(x.into())][0] += 1;
    }
    // each rank's bucket and its rank among that bucket's values
    let mut at: Vec<(usize, usize)> = Vec::with_capacity(ranks.len());
    for &r in ranks {
        let (mut b, mut left) = (0usize, r);
        while (h[b][0] + h[b][1]) as usize <= left {
            left -= (h[b][0] + h[b][1]) as usize;
            b += 1;
        }
        at.push((b, left));
    }
    let shared = if top == 64 { 0 } else { min >> top << top };
    if shift == 0 {
        return at.iter().map(|&(b, _)| shared | b as u64).collect();
    }
    let mut wanted: Vec<usize> = at.iter().map(|&(b, _)| b).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let held: usize = wanted.iter().map(|&b| (h[b][0] + h[b][1]) as usize).sum();
    if held > v.len() / 8 || wanted.len() > 255 {
        return radix_select(v, min, max, ranks);
    }
    let mut copies: Vec<Vec<u64>> =
        wanted.iter().map(|&b| Vec::with_capacity((h[b][0] + h[b][1]) as usize)).collect();
    if !T::copy_ranges(v, &wanted, shared, shift, &mut copies) {
        // which copy each wanted bucket goes to (0: not wanted): one load per value
        let mut copy_of = vec![0u8; 1 << width];
        for (k, &b) in wanted.iter().enumerate() {
            copy_of[b] = k as u8 + 1;
        }
        for &x in v {
            let x: u64 = x.into();
            let k = copy_of[bucket(x)];
            if k != 0 {
                copies[k as usize - 1].push(x);
            }
        }
    }
    at.iter()
        .map(|&(b, left)| {
            let c = &mut copies[wanted.binary_search(&b).unwrap()];
            *c.select_nth_unstable(left).1
        })
        .collect()
}

/// A type of kept values: 32 or 64 bits.
pub trait Kept: Copy + Into<u64> {
    /// Copy the values of up to four buckets (`wanted`, indexes of the 2^`shift`-wide
    /// ranges above `shared`) into `copies`, bucket by bucket, and return true; false
    /// (nothing copied) where this type has no fast way.
    fn copy_ranges(_v: &[Self], _wanted: &[usize], _shared: u64, _shift: u32, _copies: &mut [Vec<u64>]) -> bool {
        false
    }
}

impl Kept for u64 {}

impl Kept for u32 {
    fn copy_ranges(v: &[u32], wanted: &[usize], shared: u64, shift: u32, copies: &mut [Vec<u64>]) -> bool {
        if wanted.len() > 4 || shift > 16 {
            return false;
        }
        // buckets as ranges [lo, lo + w) of 32-bit values; unused places repeat the first
        let w = 1u32 << shift;
        let mut lo = [(shared | (wanted[0] as u64) << shift) as u32; 4];
        for (l, &b) in lo.iter_mut().zip(wanted) {
            *l = (shared | (b as u64) << shift) as u32;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            unsafe { copy_ranges_avx2(v, &lo, w, copies) };
            return true;
        }
        copy_ranges_any(v, &lo, w, copies);
        true
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_ranges_avx2(v: &[u32], lo: &[u32; 4], w: u32, copies: &mut [Vec<u64>]) {
    copy_ranges_any(v, lo, w, copies)
}

/// Blocks of 16 values are tested against the ranges without a branch (vector
/// instructions); only a block with a value in one is looked at value by value.
#[inline(always)]
fn copy_ranges_any(v: &[u32], lo: &[u32; 4], w: u32, copies: &mut [Vec<u64>]) {
    let inside = |x: u32| {
        (x.wrapping_sub(lo[0]) < w) | (x.wrapping_sub(lo[1]) < w) | (x.wrapping_sub(lo[2]) < w) | (x.wrapping_sub(lo[3]) < w)
    };
    let mut take = |x: u32| {
        if let Some(k) = (0..copies.len()).find(|&k| x.wrapping_sub(lo[k]) < w) {
            copies[k].push(x as u64);
        }
    };
    let mut blocks = v.chunks_exact(16);
    for b in &mut blocks {
        if b.iter().fold(false, |a, &x| a | inside(x)) {
            b.iter().for_each(|&x| take(x));
        }
    }
    blocks.remainder().iter().for_each(|&x| take(x));
}

/// Summary of raw values (read only, in any order).
pub fn dist_from_values<T: Kept>(v: &[T], pcts: &[f64]) -> Dist {
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

/// (min, max, sum) of 32-bit values: with AVX2 where the CPU has it (the baseline x86-64
/// target has no vector min/max of 32-bit integers, so the loop would stay scalar).
fn narrow_min_max_sum(v: &[u32]) -> (u64, u64, u128) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { narrow_min_max_sum_avx2(v) };
    }
    narrow_min_max_sum_any(v)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn narrow_min_max_sum_avx2(v: &[u32]) -> (u64, u64, u128) {
    narrow_min_max_sum_any(v)
}

/// 2^32 values at a time summed in 64 bits (exact); a loop without branches, which the
/// compiler turns into vector instructions.
#[inline(always)]
fn narrow_min_max_sum_any(v: &[u32]) -> (u64, u64, u128) {
    let (mut min, mut max, mut sum) = (u32::MAX, 0u32, 0u128);
    for part in v.chunks(u32::MAX as usize) {
        let mut s = 0u64;
        for &x in part {
            min = min.min(x);
            max = max.max(x);
            s += x as u64;
        }
        sum += s as u128;
    }
    (min as u64, max as u64, sum)
}

/// Summary of values whose min, max and sum are known.
fn dist_known<T: Kept>(v: &[T], min: u64, max: u64, sum: u128, pcts: &[f64]) -> Dist {
    let n = v.len() as u64;
    if n == 0 {
        return Dist::default();
    }
    let ranks: Vec<usize> = pcts.iter().map(|&p| (crate::stats::nearest_rank(n, p) - 1) as usize).collect();
    let pct = select_ranks(v, min, max, &ranks).into_iter().map(|x| x as f64).collect();
    Dist { count: n, min: min as f64, max: max as f64, mean: sum as f64 / n as f64, pct }
}

/// Values kept for exact percentiles (seek distances, latencies): 32 bits each while
/// every value fits, which halves the memory the pass fills and the traffic of the passes
/// that summarise it; 64 bits each from the first value that does not fit. Their min, max
/// and sum are taken when they are summarised, in a pass the compiler vectorises, rather
/// than as they come (three updates of memory per value in the per-event loop).
#[derive(Debug, Clone)]
pub struct Values {
    narrow: Vec<u32>,
    wide: Vec<u64>,
    /// 2^32 while the values are narrow, 0 once wide: `push` tests one comparison.
    bound: u64,
}

impl Default for Values {
    fn default() -> Self {
        Values { narrow: Vec::new(), wide: Vec::new(), bound: 1 << 32 }
    }
}

impl Values {
    #[inline]
    pub fn push(&mut self, x: u64) {
        if x < self.bound {
            self.narrow.push(x as u32);
        } else {
            self.push_wide(x);
        }
    }

    #[cold]
    fn push_wide(&mut self, x: u64) {
        if self.bound != 0 {
            let mut wide: Vec<u64> = Vec::with_capacity(self.narrow.capacity().max(self.narrow.len() + 1));
            wide.extend(self.narrow.iter().map(|&x| x as u64));
            self.wide = wide;
            self.narrow = Vec::new();
            self.bound = 0;
        }
        self.wide.push(x);
    }

    /// Room for `n` more values, in huge pages where the kernel offers them (tens of MB
    /// filled once: a fault per 2 MiB instead of per 4 KiB).
    pub fn reserve(&mut self, n: usize) {
        if self.is_narrow() {
            self.narrow.reserve(n);
            crate::mem::huge_pages(self.narrow.spare_capacity_mut());
        } else {
            self.wide.reserve(n);
            crate::mem::huge_pages(self.wide.spare_capacity_mut());
        }
    }

    pub fn len(&self) -> usize {
        self.narrow.len() + self.wide.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_narrow(&self) -> bool {
        self.bound != 0
    }

    /// Count, min, max, mean and the percentiles `pcts` of the values.
    pub fn dist(&self, pcts: &[f64]) -> Dist {
        if self.is_narrow() {
            let (min, max, sum) = narrow_min_max_sum(&self.narrow);
            dist_known(&self.narrow, min, max, sum, pcts)
        } else {
            dist_from_values(&self.wide, pcts)
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
    if cols.event.contains(&EV_ISSUE) {
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

/// What one direction's requests add up to while the pass runs, in one place (one
/// address to compute per event, not one per field).
#[derive(Default)]
#[repr(C)] // the fields in this order (see `forward`)
struct DirAcc {
    prev_end: Option<u64>,
    sequential: u64,
    seeks: Values,
    // not beside `sequential`: two adjacent counters are added as one vector, which
    // takes more instructions than two plain additions
    forward: u64,
    latency_ns: Values,
    sizes: FastMap<u64, u64>,
    small_sizes: Vec<u64>,
}

/// The directions' accumulators and the data requests and sectors per task (two
/// arrays: a pair would be added as one vector, in more instructions).
struct DataAcc {
    dirs: [DirAcc; 2],
    // indexed by a u16: no bounds checks
    task_requests: Box<[u64; 1 << 16]>,
    task_sectors: Box<[u64; 1 << 16]>,
}

impl DataAcc {
    fn new() -> DataAcc {
        let dir = || DirAcc { small_sizes: vec![0; SMALL_SIZES], ..DirAcc::default() };
        let per_task = || vec![0u64; 1 << 16].into_boxed_slice().try_into().unwrap();
        DataAcc { dirs: [dir(), dir()], task_requests: per_task(), task_sectors: per_task() }
    }

    /// A data request of direction `d` (0 read, 1 write) of `nr` > 0 sectors at `st`.
    #[inline(always)]
    fn add(&mut self, d: usize, st: u64, nr: u32, comm: u16) {
        let a = &mut self.dirs[d];
        let nr = nr as u64;
        match a.small_sizes.get_mut(nr as usize) {
            Some(k) => *k += 1,
            None => *a.sizes.entry(nr).or_default() += 1,
        }
        if let Some(pe) = a.prev_end {
            a.sequential += (st == pe) as u64;
            a.forward += (st >= pe) as u64;
            a.seeks.push(st.abs_diff(pe));
        }
        a.prev_end = Some(st + nr);
        self.task_requests[comm as usize] += 1;
        self.task_sectors[comm as usize] += nr; // bytes when the pass ends
    }
}

/// The state of the pass, so that it can go on from any event with other settings.
struct Pass {
    s: Summary,
    issued: Inflight,
    twins: Vec<[u64; 2]>,
    flag_hist: [u64; 256],
    /// completed requests and sectors by op code, any byte: no clamp per event (folded
    /// into `Summary::requests` and `sectors` when the pass ends)
    op_requests: [u64; 256],
    op_sectors: [u64; 256],
    acc: DataAcc,
}

/// The pass over a trace. It starts without the cache of FUA twins (which costs a
/// random store per data write completion) and takes it up from the first empty write
/// completion, the only event that reads it (a FUA twin or an empty preflush), filled
/// with the data write completions before that event as if it had been kept from the
/// start: most traces have none and never pay for the cache, nor for a scan for one.
fn summarize_with<const BY_ISSUE: bool>(c: &Columns) -> Summary {
    let n = c.time_ns.len();
    let mut p = Pass {
        s: Summary { used_issue_events: BY_ISSUE, ..Summary::default() },
        issued: Inflight::new(),
        twins: Vec::new(),
        flag_hist: [0; 256],
        op_requests: [0; 256],
        op_sectors: [0; 256],
        acc: DataAcc::new(),
    };
    // Room for the common case (half the events are a direction's data requests) without
    // regrowing: capacity that is never written costs no memory.
    for d in p.acc.dirs.iter_mut() {
        d.seeks.reserve(n / 2);
        d.latency_ns.reserve(n / 2);
    }
    let (mut p, stopped) = p.run::<false, BY_ISSUE>(c, 0);
    if let Err(at) = stopped {
        p.twins = vec![[0, 0]; TWIN_SLOTS];
        for i in 0..at {
            if c.event[i] == EV_COMPLETE && c.op[i] == OP_WRITE && c.nr_sector[i] > 0 {
                let twin = (c.dev[i], c.sector[i], c.flags[i]);
                p.twins[slot(&twin)] = twin_entry(&twin);
            }
        }
        let (q, all_done) = p.run::<true, BY_ISSUE>(c, at);
        debug_assert!(all_done.is_ok());
        p = q;
    }
    p.finish()
}

impl Pass {
    /// Events `from..` in time order. `BY_ISSUE`: data requests are issue events (else
    /// completions); `TWINS`: FUA twins are recognised; without it the pass stops at the
    /// first empty write completion, before taking it, and returns its index. Each event
    /// kind takes its own branch, which tests only what that kind needs. The state is
    /// taken by value: in locals, the compiler need not assume that the stores to one
    /// part of it may change another.
    fn run<const TWINS: bool, const BY_ISSUE: bool>(self, c: &Columns, from: usize) -> (Pass, Result<(), usize>) {
        let Columns { time_ns, event, dev, sector, nr_sector, op, flags, comm } = *c;
        let Pass { s, mut issued, mut twins, mut flag_hist, mut op_requests, mut op_sectors, mut acc } = self;
        let stopped = 'events: {
            for i in from..time_ns.len() {
                let o = op[i];
                let e = event[i];
                if e == EV_ISSUE {
                    if o == OP_FLUSH {
                        continue;
                    }
                    if BY_ISSUE && o <= OP_WRITE && nr_sector[i] > 0 {
                        let d = o as usize;
                        acc.add(d, sector[i], nr_sector[i], comm[i]);
                    }
                    let key = ReqKey(dev[i], sector[i], o);
                    issued.issue(key, time_ns[i]);
                } else if e == EV_COMPLETE {
                    let nr = nr_sector[i];
                    if o == OP_WRITE {
                        if !TWINS {
                            if nr == 0 {
                                break 'events Err(i);
                            }
                        } else {
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
                    }
                    op_requests[o as usize] += 1;
                    op_sectors[o as usize] += nr as u64;
                    flag_hist[flags[i] as usize] += 1;
                    if !BY_ISSUE && o <= OP_WRITE && nr > 0 {
                        let d = o as usize;
                        acc.add(d, sector[i], nr, comm[i]);
                    }
                    if o == OP_FLUSH {
                        continue;
                    }
                    let key = ReqKey(dev[i], sector[i], o);
                    if let Some(t0) = issued.complete(key) {
                        if o <= OP_WRITE {
                            acc.dirs[o as usize].latency_ns.push(time_ns[i].saturating_sub(t0));
                        }
                    }
                }
            }
            Ok(())
        };
        (Pass { s, issued, twins, flag_hist, op_requests, op_sectors, acc }, stopped)
    }

    /// The summary, from the counts the pass kept.
    fn finish(self) -> Summary {
        let Pass { mut s, flag_hist, op_requests, op_sectors, acc, .. } = self;
        for o in 0..256 {
            s.requests[o.min(4)] += op_requests[o];
            s.sectors[o.min(4)] += op_sectors[o];
        }
        let DataAcc { dirs, task_requests, task_sectors } = acc;
        for (dd, a) in s.dirs.iter_mut().zip(dirs) {
            dd.sizes = a.sizes;
            for (nr, &k) in a.small_sizes.iter().enumerate() {
                if k > 0 {
                    *dd.sizes.entry(nr as u64).or_default() += k;
                }
            }
            dd.sequential = a.sequential;
            dd.forward = a.forward;
            dd.seeks = a.seeks;
            dd.latency_ns = a.latency_ns;
            // every data request after a direction's first is a transition
            dd.transitions = dd.sizes.values().sum::<u64>().saturating_sub(1);
        }
        for (f, &k) in flag_hist.iter().enumerate() {
            for b in 0..8 {
                s.flag_counts[b] += ((f >> b) & 1) as u64 * k;
            }
        }
        for (code, (&r, &b)) in task_requests.iter().zip(task_sectors.iter()).enumerate().take(u16::MAX as usize) {
            if r > 0 {
                s.tasks.insert(code as u16, (r, b.wrapping_mul(512)));
            }
        }
        s
    }
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
                None if grow || x.is_multiple_of(3) => {
                    t.insert(k, step);
                    reference.insert((k.0, k.1, k.2), step);
                }
                Some(i) if !grow || x.is_multiple_of(4) => {
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

    /// xorshift64: deterministic pseudo-random numbers for the tests.
    fn next(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    fn sorted_dist(mut v: Vec<u64>, pcts: &[f64]) -> Dist {
        if v.is_empty() {
            return Dist::default();
        }
        v.sort_unstable();
        let n = v.len() as u64;
        Dist {
            count: n,
            min: v[0] as f64,
            max: v[v.len() - 1] as f64,
            mean: v.iter().map(|&x| x as u128).sum::<u128>() as f64 / n as f64,
            pct: pcts.iter().map(|&p| v[(crate::stats::nearest_rank(n, p) - 1) as usize] as f64).collect(),
        }
    }

    #[test]
    fn selection_matches_a_full_sort_on_spread_piled_and_wide_values() {
        let pcts = [0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0];
        let mut x = 99u64;
        let spread: Vec<u64> = (0..200_000).map(|_| next(&mut x) >> 40).collect();
        // nearly all on three values, a few far off: the ranks' buckets hold most values
        let piled: Vec<u64> = (0..200_000)
            .map(|i| match next(&mut x) % 1000 { 0 => 1 << 30, 1..=3 => next(&mut x) >> 34, _ => 100_000 + i % 3 })
            .collect();
        let wide: Vec<u64> = (0..50_000).map(|_| next(&mut x)).collect();
        let narrow_range: Vec<u64> = (0..50_000).map(|_| 1_000_000 + next(&mut x) % 5000).collect();
        for (name, v) in [("spread", spread), ("piled", piled), ("wide", wide), ("narrow range", narrow_range)] {
            // seven percentiles (more buckets than the vector copy takes) and three
            for pcts in [&pcts[..], &[50.0, 90.0, 99.0]] {
                let want = sorted_dist(v.clone(), pcts);
                assert_eq!(dist_from_values(&v, pcts), want, "{name}");
                let mut kept = Values::default();
                v.iter().for_each(|&x| kept.push(x));
                assert_eq!(kept.dist(pcts), want, "{name}, kept");
            }
        }
    }

    /// The summary computed the plain way: `analyze::match_requests` for what is counted
    /// and each latency (exact maps, no caches), data requests picked event by event,
    /// percentiles from a full sort.
    #[allow(clippy::too_many_arguments)]
    fn plain_summary(
        time: &[u64], event: &[u8], dev: &[u32], sector: &[u64], nr: &[u32], op: &[u8], flags: &[u8],
        comm: &[u16], pcts: &[f64],
    ) -> String {
        let (lat, counted) = super::super::analyze::match_requests(time, event, dev, sector, nr, op, flags);
        let (mut requests, mut sectors, mut flag_counts) = ([0u64; 5], [0u64; 5], [0u64; 8]);
        for i in 0..time.len() {
            if counted[i] == 1 {
                requests[op[i].min(4) as usize] += 1;
                sectors[op[i].min(4) as usize] += nr[i] as u64;
                (0..8).for_each(|b| flag_counts[b] += ((flags[i] >> b) & 1) as u64);
            }
        }
        let data_ev = if event.contains(&EV_ISSUE) { EV_ISSUE } else { EV_COMPLETE };
        let mut tasks: BTreeMap<u16, (u64, u64)> = BTreeMap::new();
        let mut dirs = Vec::new();
        for d in [OP_READ, OP_WRITE] {
            let data: Vec<usize> =
                (0..time.len()).filter(|&i| event[i] == data_ev && nr[i] > 0 && op[i] == d).collect();
            let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
            data.iter().for_each(|&i| *sizes.entry(nr[i] as u64).or_default() += 1);
            for &i in data.iter().filter(|&&i| comm[i] != crate::trace::page::NO_COMM) {
                let t = tasks.entry(comm[i]).or_default();
                t.0 += 1;
                t.1 += nr[i] as u64 * 512;
            }
            let pairs: Vec<(u64, u64)> = data.windows(2).map(|w| (sector[w[1]], sector[w[0]] + nr[w[0]] as u64)).collect();
            let seeks: Vec<u64> = pairs.iter().map(|&(st, pe)| st.abs_diff(pe)).collect();
            let latency: Vec<u64> = (0..time.len()).filter(|&i| lat[i] >= 0 && op[i] == d).map(|i| lat[i] as u64).collect();
            dirs.push(format!(
                "{sizes:?} {} {} {} {:?} {:?}",
                pairs.len(),
                pairs.iter().filter(|&&(st, pe)| st == pe).count(),
                pairs.iter().filter(|&&(st, pe)| st >= pe).count(),
                sorted_dist(seeks, pcts),
                sorted_dist(latency, pcts)
            ));
        }
        format!("{requests:?} {sectors:?} {flag_counts:?} {tasks:?} {} {dirs:?}", data_ev == EV_ISSUE)
    }

    fn summary_text(s: &Summary, pcts: &[f64]) -> String {
        let dirs: Vec<String> = s
            .dirs
            .iter()
            .map(|d| {
                let sizes: BTreeMap<u64, u64> = d.sizes.iter().map(|(&k, &v)| (k, v)).collect();
                format!(
                    "{sizes:?} {} {} {} {:?} {:?}",
                    d.transitions,
                    d.sequential,
                    d.forward,
                    d.seeks.dist(pcts),
                    d.latency_ns.dist(pcts)
                )
            })
            .collect();
        format!("{:?} {:?} {:?} {:?} {} {dirs:?}", s.requests, s.sectors, s.flag_counts, s.tasks, s.used_issue_events)
    }

    #[test]
    fn summary_equals_a_plain_computation_on_random_traces() {
        // Random traces of reads, writes, flushes and discards on two devices, queue depth
        // up to 40, completions out of order, sequential runs, re-issues of a sector still
        // in flight, FUA writes (a data completion, then an empty twin after a flush) from
        // none to the first or only the last request, empty preflushes, and traces
        // without issue events (completions only).
        let pcts = [0.0, 50.0, 90.0, 99.0, 100.0];
        let mut x = 7u64;
        for case in 0..40u64 {
            let (mut time, mut event, mut dev, mut sector, mut nr, mut op, mut flags, mut comm) =
                (vec![], vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
            let mut push = |t: u64, e: u8, d: u32, s: u64, n: u32, o: u8, f: u8, c: u16| {
                time.push(t);
                event.push(e);
                dev.push(d);
                sector.push(s);
                nr.push(n);
                op.push(o);
                flags.push(f);
                comm.push(c);
            };
            let requests = 2000 + next(&mut x) % 3000;
            let fua_from = match case % 4 { 0 => u64::MAX, 1 => 0, 2 => requests - 3, _ => requests / 2 };
            let issues = case % 5 != 4;
            let mut flight: Vec<(u32, u64, u32, u8, u8)> = Vec::new();
            let mut t = 0u64;
            let mut next_sector = 0u64;
            for r in 0..requests {
                t += 1 + next(&mut x) % 1000;
                let o = match next(&mut x) % 20 { 0 => crate::trace::OP_FLUSH, 1 => crate::trace::OP_DISCARD, 2..=9 => OP_READ, _ => OP_WRITE };
                let d = 1 + (next(&mut x) % 2) as u32;
                let n = if o == crate::trace::OP_FLUSH { 0 } else { 1 + (next(&mut x) % 64) as u32 * 8 };
                let st = match next(&mut x) % 4 {
                    0 => next_sector,
                    1 if !flight.is_empty() => flight[0].1, // a sector still in flight
                    _ => next(&mut x) % (1 << 24),
                };
                next_sector = st + n as u64;
                let fua = r >= fua_from && o == OP_WRITE && next(&mut x).is_multiple_of(3);
                let f = if fua { crate::trace::FL_FUA | crate::trace::FL_SYNC } else { crate::trace::FL_SYNC };
                if issues {
                    push(t, EV_ISSUE, d, st, n, o, f, (next(&mut x) % 5) as u16);
                }
                flight.push((d, st, n, o, f));
                while flight.len() > (next(&mut x) % 40) as usize {
                    let k = (next(&mut x) as usize) % flight.len().min(4); // mostly in order
                    let (d, st, n, o, f) = flight.remove(k);
                    t += next(&mut x) % 50;
                    push(t, EV_COMPLETE, d, st, n, o, f, crate::trace::page::NO_COMM);
                    if f & crate::trace::FL_FUA != 0 {
                        push(t + 1, EV_ISSUE, d, u64::MAX, 0, crate::trace::OP_FLUSH, crate::trace::FL_PREFLUSH, 0);
                        push(t + 2, EV_COMPLETE, d, u64::MAX, 0, crate::trace::OP_FLUSH, crate::trace::FL_PREFLUSH, 0);
                        push(t + 3, EV_COMPLETE, d, st, 0, o, f, crate::trace::page::NO_COMM); // the twin
                        t += 3;
                    }
                }
                if r >= fua_from && next(&mut x).is_multiple_of(50) {
                    push(t, EV_COMPLETE, d, 0, 0, OP_WRITE, crate::trace::FL_SYNC, crate::trace::page::NO_COMM); // empty preflush
                }
            }
            let got = summarize(&time, &event, &dev, &sector, &nr, &op, &flags, &comm);
            let want = plain_summary(&time, &event, &dev, &sector, &nr, &op, &flags, &comm, &pcts);
            assert_eq!(summary_text(&got, &pcts), want, "case {case}");
        }
    }

    #[test]
    fn percentiles_taken_in_any_order_match_a_full_sort() {
        let v: Vec<u64> = (0..10_001u64).map(|i| (i * 7919) % 10_007).collect();
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
        let wide: Vec<u64> = vec![u64::MAX, 0, 1 << 63, 5, 5, 5, u64::MAX - 1, 1 << 20, 77];
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
