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

/// Summary of raw values (reordered in place by selection, O(n)).
pub fn dist_from_values(v: &mut [u64], pcts: &[f64]) -> Dist {
    let n = v.len() as u64;
    if n == 0 {
        return Dist::default();
    }
    let sum: f64 = v.iter().map(|&x| x as f64).sum();
    let min = *v.iter().min().unwrap() as f64;
    let max = *v.iter().max().unwrap() as f64;
    let mut pct = Vec::new();
    for &p in pcts {
        let rank = (crate::stats::nearest_rank(n, p) - 1) as usize;
        pct.push(*v.select_nth_unstable(rank).1 as f64);
    }
    Dist { count: n, min, max, mean: sum / n as f64, pct }
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
    let mut issued: FastMap<(u32, u64, u8), (u64, u32)> = FastMap::default();
    let mut extra: FastMap<(u32, u64, u8), VecDeque<u64>> = FastMap::default();
    issued.reserve(4096);
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
                *dd.sizes.entry(nr).or_default() += 1;
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
        let key = (dev[i], sector[i], o);
        if e == EV_ISSUE {
            if o != OP_FLUSH {
                match issued.get_mut(&key) {
                    None => { issued.insert(key, (time_ns[i], 0)); }
                    Some(v) => { v.1 += 1; extra.entry(key).or_default().push_back(time_ns[i]); }
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
                if let Some(v) = issued.get_mut(&key) {
                    let t0 = v.0;
                    if v.1 == 0 {
                        issued.remove(&key);
                    } else {
                        v.1 -= 1;
                        let q = extra.get_mut(&key).unwrap();
                        v.0 = q.pop_front().unwrap();
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
