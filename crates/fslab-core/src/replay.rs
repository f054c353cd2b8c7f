//! Replay a request list on a model through the event engine, closed loop (a fixed
//! number of requests outstanding, as fio drives a device at an iodepth) or open loop
//! (each request issued at its own trace timestamp), and summarise the outcome.

use crate::engine::{EventKind, EventQueue, KeyQueue};
use crate::error::{CoreError, Result};
use crate::models::{write_amplification, Counters, DeviceModel, Facts, Mechanisms};
use crate::request::{Ns, Op, Request, SECTOR_BYTES};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Closed { queue_depth: u32 },
    Open,
}

#[derive(Clone, Debug)]
pub struct ReplayOutcome {
    /// Completion minus issue time of each request, in input order, in nanoseconds.
    pub latencies_ns: Vec<Ns>,
    /// From the first issue to the last completion.
    pub elapsed_ns: Ns,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub counters: Counters,
    pub facts: Facts,
    /// The model's work in nanoseconds per mechanism (`DeviceModel::time_by_mechanism`).
    pub time_by_mechanism_ns: Mechanisms,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub requests: u64,
    pub elapsed_ns: Ns,
    pub iops: f64,
    /// Decimal megabytes (10^6 bytes) per second, reads plus writes.
    pub mb_per_s: f64,
    /// Request latencies (issue to completion) in nanoseconds: the mean, and percentiles by
    /// nearest rank (whole nanoseconds).
    pub latency_mean_ns: f64,
    pub latency_p50_ns: Ns,
    pub latency_p99_ns: Ns,
    pub latency_max_ns: Ns,
    pub write_amplification: f64,
}

/// Check requests against the device before replay.
pub fn validate(reqs: &[Request], capacity: u64) -> Result<()> {
    scan(reqs, capacity).map(|_| ())
}

/// What replay needs to know of the whole list, gathered in one pass (the list can be
/// far larger than the caches, so each extra pass costs memory bandwidth).
struct Scan {
    /// Earliest trace timestamp (open loop issues relative to it).
    base_ns: Ns,
    read_bytes: u64,
    write_bytes: u64,
}

fn scan(reqs: &[Request], capacity: u64) -> Result<Scan> {
    let mut s = Scan { base_ns: Ns::MAX, read_bytes: 0, write_bytes: 0 };
    for (i, r) in reqs.iter().enumerate() {
        s.base_ns = s.base_ns.min(r.time_ns);
        check(r, i, capacity, &mut s.read_bytes, &mut s.write_bytes)?;
    }
    if reqs.is_empty() {
        s.base_ns = 0;
    }
    Ok(s)
}

/// Check request `i` against the device and add its bytes to the read or write total.
#[inline(always)]
fn check(r: &Request, i: usize, capacity: u64, read_bytes: &mut u64, write_bytes: &mut u64) -> Result<()> {
    match r.op {
        Op::Flush => return Ok(()),
        Op::Read => *read_bytes += r.bytes,
        Op::Write => *write_bytes += r.bytes,
        Op::Trim => {}
    }
    // Checked: a sector from outside (a trace, Python) near 2^55 would wrap the byte
    // offset to a small one, which passes the bound and reaches past the model's maps.
    let end = r.sector.checked_mul(SECTOR_BYTES).and_then(|o| o.checked_add(r.bytes));
    if r.bytes == 0 || end.is_none_or(|e| e > capacity) {
        return Err(bad_request(r, i, capacity));
    }
    Ok(())
}

#[cold]
fn bad_request(r: &Request, i: usize, capacity: u64) -> CoreError {
    if r.bytes == 0 {
        return CoreError::BadRequest { index: i, reason: "zero bytes".into() };
    }
    CoreError::BadRequest {
        index: i,
        reason: format!(
            "ends at byte {} beyond the model's capacity of {capacity} bytes (set a larger capacity)",
            u128::from(r.sector) * u128::from(SECTOR_BYTES) + u128::from(r.bytes)
        ),
    }
}

/// How many requests ahead of the one being issued to hint the model (`prefetch`), so the
/// state a request will touch is in cache by the time it is issued.
pub(crate) const PREFETCH_AHEAD: usize = 16;
/// How many requests ahead the second hint goes (`DeviceModel::prefetch_near`): far
/// enough for what it asks for to arrive, near enough for the first hint's to have.
const PREFETCH_NEAR: usize = 8;
/// How many requests ahead a replay asks for the line of the latency it will store (8 to a
/// line, so 8 lines ahead). Without it each new line of the latencies is loaded by the
/// store itself, and where the allocator hands the buffer memory the process used before
/// (glibc does for a buffer under its dynamic mmap threshold, once a buffer of that size
/// has been freed), rather than fresh pages that the kernel's zeroing leaves in cache,
/// those stores held the loop up: random reads ran at 42 M requests/s in the speed bench's
/// order (after its reference and floor loops), 100 M with the hint.
pub(crate) const LATENCIES_AHEAD: usize = 64;
/// How many requests ahead the closed loop asks for the request list itself: the list
/// (32 bytes a request, 64 MB for 2 M) is read in order, yet without this hint the loop's
/// load of the next request's fields was where a profile found it waiting (random reads
/// ~10% faster with it; 32 or 128 ahead, the same).
const REQUESTS_AHEAD: usize = 64;

pub fn replay(model: &mut dyn DeviceModel, reqs: &[Request], mode: Mode) -> Result<ReplayOutcome> {
    let n = reqs.len();
    if let Mode::Closed { queue_depth } = mode {
        if model.completes_on_submit() && n > 0 {
            return model.replay_closed_on_submit(reqs, queue_depth);
        }
    }
    let Scan { base_ns: base, read_bytes, write_bytes } = scan(reqs, model.capacity_bytes())?;
    // Holds each request's issue time until it completes, then its latency (every
    // request completes exactly once), so the two never need separate arrays.
    let mut latencies: Vec<Ns> = vec![0; n];
    let mut q = EventQueue::new();
    let mut next = 0usize;
    let mut last_done: Ns = 0;
    let mut first_issue: Ns = Ns::MAX;
    let mut issue = |model: &mut dyn DeviceModel, q: &mut EventQueue, latencies: &mut [Ns], i: usize, now: Ns| {
        latencies[i] = now;
        // Requests are issued in list order in a closed loop, and in an open loop in time
        // order, which is list order for a trace (elsewhere the hint is only wasted).
        crate::models::prefetch_at(latencies.as_ptr().wrapping_add(i + LATENCIES_AHEAD));
        first_issue = first_issue.min(now);
        model.submit(now, i as u64, &reqs[i], q);
    };
    match mode {
        Mode::Closed { queue_depth } => {
            let qd = (queue_depth.max(1) as usize).min(n);
            for ahead in reqs.iter().take(PREFETCH_AHEAD) {
                model.prefetch(ahead);
            }
            while next < qd {
                if let Some(ahead) = reqs.get(next + PREFETCH_AHEAD) {
                    model.prefetch(ahead);
                }
                issue(model, &mut q, &mut latencies, next, 0);
                next += 1;
            }
            while let Some(ev) = q.pop() {
                match ev.kind {
                    EventKind::Completion { tag } => {
                        latencies[tag as usize] = ev.time - latencies[tag as usize];
                        last_done = last_done.max(ev.time);
                        if next < n {
                            if let Some(ahead) = reqs.get(next + PREFETCH_AHEAD) {
                                model.prefetch(ahead);
                            }
                            issue(model, &mut q, &mut latencies, next, ev.time);
                            next += 1;
                        }
                    }
                    EventKind::Wake { token } => model.wake(ev.time, token, &mut q),
                    EventKind::Arrival { .. } => unreachable!("closed loop has no arrivals"),
                }
            }
        }
        Mode::Open => {
            // Arrivals come straight from the (time-sorted) list rather than the heap.
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&i| (reqs[i].time_ns, i));
            let mut k = 0;
            loop {
                let arrival = order.get(k).map(|&i| reqs[i].time_ns - base);
                let event = q.peek_time();
                match (arrival, event) {
                    (None, None) => break,
                    (Some(a), e) if e.is_none_or(|t| a <= t) => {
                        if let Some(&ahead) = order.get(k + PREFETCH_AHEAD) {
                            model.prefetch(&reqs[ahead]);
                        }
                        if let Some(&near) = order.get(k + PREFETCH_NEAR) {
                            model.prefetch_near(&reqs[near]);
                        }
                        issue(model, &mut q, &mut latencies, order[k], a);
                        k += 1;
                    }
                    _ => {
                        let ev = q.pop().unwrap();
                        match ev.kind {
                            EventKind::Completion { tag } => {
                                latencies[tag as usize] = ev.time - latencies[tag as usize];
                                last_done = last_done.max(ev.time);
                            }
                            EventKind::Wake { token } => model.wake(ev.time, token, &mut q),
                            EventKind::Arrival { .. } => unreachable!(),
                        }
                    }
                }
            }
        }
    }
    let elapsed_ns = if n == 0 { 0 } else { last_done.saturating_sub(first_issue) };
    outcome(model, latencies, elapsed_ns, read_bytes, write_bytes)
}

/// The outcome of a finished replay, or the model's error.
fn outcome<M: DeviceModel + ?Sized>(model: &M, latencies: Vec<Ns>, elapsed_ns: Ns, read_bytes: u64, write_bytes: u64) -> Result<ReplayOutcome> {
    if let Some(reason) = model.error() {
        return Err(CoreError::Model(reason));
    }
    Ok(ReplayOutcome {
        facts: model.facts(),
        latencies_ns: latencies,
        elapsed_ns,
        read_bytes,
        write_bytes,
        counters: model.counters(),
        time_by_mechanism_ns: model.time_by_mechanism(),
    })
}

/// The closed loop of a model that `completes_on_submit`: the same events in the same
/// order as the general loop, which it saves a dynamic call back (`Ctx::complete`) per
/// request, half the bytes an event queue moves (a completion is a time and a tag), the
/// checks for events such a model never asks for, and the pass of `scan`
/// before it: each request is checked as it is issued, in list order, so a bad one gives
/// the same error (the model, left part-way, is not used after an error). Every request is
/// issued at 0 or at a completion, so the first issue is at 0; the last completion popped
/// is the last one (events pop in time order). An empty list is an empty outcome.
pub(crate) fn closed_on_submit<M: DeviceModel + ?Sized>(model: &mut M, reqs: &[Request], queue_depth: u32) -> Result<ReplayOutcome> {
    struct Loop<'a> {
        reqs: &'a [Request],
        /// `reqs.len() - 1`: the hints ahead are clamped to it, so near the end of the
        /// list they fall on the last request (harmless) instead of costing a branch.
        last: usize,
        capacity: u64,
        latencies: Vec<Ns>,
        /// Completions as `time << 64 | tag`: requests are issued in tag order, so tag
        /// order is the engine's insertion order and this is its (time, seq) order.
        q: KeyQueue<u128>,
        read_bytes: u64,
        write_bytes: u64,
    }
    impl Loop<'_> {
        #[inline(always)]
        fn issue<M: DeviceModel + ?Sized>(&mut self, model: &mut M, i: usize, now: Ns) -> Result<()> {
            // SAFETY: `issue` is only called with `i < n`, so `n >= 1` and `last`, `n - 1`,
            // is an index of `reqs`.
            let ahead = |k: usize| unsafe { self.reqs.get_unchecked((i + k).min(self.last)) };
            crate::models::prefetch_read(ahead(REQUESTS_AHEAD));
            model.prefetch(ahead(PREFETCH_AHEAD));
            model.prefetch_near(ahead(PREFETCH_NEAR));
            let r = &self.reqs[i];
            check(r, i, self.capacity, &mut self.read_bytes, &mut self.write_bytes)?;
            // Holds the issue time until the request completes, then its latency. Requests
            // are issued in list order, so this is a push into the reserved capacity (no
            // buffer of zeros first, each to be overwritten).
            debug_assert_eq!(self.latencies.len(), i);
            crate::models::prefetch_at(self.latencies.as_ptr().wrapping_add(i + LATENCIES_AHEAD));
            self.latencies.push(now);
            let done = model.service(now, r);
            self.q.push(((done as u128) << 64) | i as u128);
            Ok(())
        }
    }
    let n = reqs.len();
    if n == 0 {
        return outcome(model, Vec::new(), 0, 0, 0);
    }
    let qd = (queue_depth.max(1) as usize).min(n);
    for ahead in reqs.iter().take(PREFETCH_AHEAD) {
        model.prefetch(ahead);
    }
    let mut l = Loop { reqs, last: n - 1, capacity: model.capacity_bytes(), latencies: Vec::with_capacity(n), q: KeyQueue::default(), read_bytes: 0, write_bytes: 0 };
    for i in 0..qd {
        l.issue(model, i, 0)?;
    }
    let mut next = qd;
    let mut last_done = 0;
    while let Some(key) = l.q.pop() {
        let (time, tag) = ((key >> 64) as Ns, key as u64 as usize);
        // SAFETY: a tag is queued only after its request's issue time was pushed, and the
        // latencies never shrink: every popped tag is below `latencies.len()`.
        debug_assert!(tag < l.latencies.len());
        let issued = unsafe { l.latencies.get_unchecked_mut(tag) };
        *issued = time - *issued;
        last_done = time;
        if next < l.reqs.len() {
            l.issue(model, next, time)?;
            next += 1;
        }
    }
    outcome(model, l.latencies, last_done, l.read_bytes, l.write_bytes)
}

/// The p-th percentile (0–100) of sorted values: fslab's one definition, the nearest
/// rank (crate::stats). 0 for no values.
pub fn percentile(sorted: &[Ns], p: f64) -> Ns {
    if sorted.is_empty() {
        return 0;
    }
    sorted[(crate::stats::nearest_rank(sorted.len() as u64, p) - 1) as usize]
}

impl ReplayOutcome {
    pub fn summary(&self) -> Summary {
        let n = self.latencies_ns.len() as u64;
        let mut sorted = self.latencies_ns.clone();
        sorted.sort_unstable();
        let secs = self.elapsed_ns as f64 / 1e9;
        let rate = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        let mean = if n == 0 { 0.0 } else { sorted.iter().map(|&v| v as f64).sum::<f64>() / n as f64 };
        Summary {
            requests: n,
            elapsed_ns: self.elapsed_ns,
            iops: rate(n as f64),
            mb_per_s: rate((self.read_bytes + self.write_bytes) as f64) / 1e6,
            latency_mean_ns: mean,
            latency_p50_ns: percentile(&sorted, 50.0),
            latency_p99_ns: percentile(&sorted, 99.0),
            latency_max_ns: sorted.last().copied().unwrap_or(0),
            write_amplification: write_amplification(&self.counters),
        }
    }
}
