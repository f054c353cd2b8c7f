//! Replay a request list on a model through the event engine, closed loop (a fixed
//! number of requests outstanding, as fio drives a device at an iodepth) or open loop
//! (each request issued at its own trace timestamp), and summarise the outcome.

use crate::engine::{EventKind, EventQueue};
use crate::error::{CoreError, Result};
use crate::models::{write_amplification, Counters, DeviceModel};
use crate::request::{Ns, Op, Request};

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
}

#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub requests: u64,
    pub elapsed_ns: Ns,
    pub iops: f64,
    /// Decimal megabytes (10^6 bytes) per second, reads plus writes.
    pub mb_per_s: f64,
    pub latency_mean_us: f64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_max_us: f64,
    pub write_amplification: f64,
}

/// Check requests against the device before replay.
pub fn validate(reqs: &[Request], capacity: u64) -> Result<()> {
    for (i, r) in reqs.iter().enumerate() {
        if r.op == Op::Flush {
            continue;
        }
        if r.bytes == 0 {
            return Err(CoreError::BadRequest { index: i, reason: "zero bytes".into() });
        }
        if r.offset() + r.bytes > capacity {
            return Err(CoreError::BadRequest {
                index: i,
                reason: format!(
                    "ends at byte {} beyond the model's capacity of {capacity} bytes (set a larger capacity)",
                    r.offset() + r.bytes
                ),
            });
        }
    }
    Ok(())
}

pub fn replay(model: &mut dyn DeviceModel, reqs: &[Request], mode: Mode) -> Result<ReplayOutcome> {
    validate(reqs, model.capacity_bytes())?;
    let n = reqs.len();
    let mut issued_at: Vec<Ns> = vec![0; n];
    let mut latencies: Vec<Ns> = vec![0; n];
    let mut q = EventQueue::new();
    let mut next = 0usize;
    let base = reqs.iter().map(|r| r.time_ns).min().unwrap_or(0);
    let mut last_done: Ns = 0;
    let mut first_issue: Ns = Ns::MAX;
    let mut issue = |model: &mut dyn DeviceModel, q: &mut EventQueue, i: usize, now: Ns| {
        issued_at[i] = now;
        first_issue = first_issue.min(now);
        model.submit(now, i as u64, &reqs[i], q);
    };
    match mode {
        Mode::Closed { queue_depth } => {
            let qd = (queue_depth.max(1) as usize).min(n);
            while next < qd {
                issue(model, &mut q, next, 0);
                next += 1;
            }
            while let Some(ev) = q.pop() {
                match ev.kind {
                    EventKind::Completion { tag } => {
                        latencies[tag as usize] = ev.time;
                        last_done = last_done.max(ev.time);
                        if next < n {
                            issue(model, &mut q, next, ev.time);
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
                    (Some(a), e) if e.map_or(true, |t| a <= t) => {
                        issue(model, &mut q, order[k], a);
                        k += 1;
                    }
                    _ => {
                        let ev = q.pop().unwrap();
                        match ev.kind {
                            EventKind::Completion { tag } => {
                                latencies[tag as usize] = ev.time;
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
    // `latencies` held completion times until here.
    for (l, &t) in latencies.iter_mut().zip(issued_at.iter()) {
        *l -= t;
    }
    let read_bytes = reqs.iter().filter(|r| r.op == Op::Read).map(|r| r.bytes).sum();
    let write_bytes = reqs.iter().filter(|r| r.op == Op::Write).map(|r| r.bytes).sum();
    Ok(ReplayOutcome {
        latencies_ns: latencies,
        elapsed_ns: if n == 0 { 0 } else { last_done.saturating_sub(first_issue) },
        read_bytes,
        write_bytes,
        counters: model.counters(),
    })
}

/// Nearest-rank percentile, `p` on a 0–100 scale, of sorted values.
pub fn percentile(sorted: &[Ns], p: f64) -> Ns {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
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
            latency_mean_us: mean / 1e3,
            latency_p50_us: percentile(&sorted, 50.0) as f64 / 1e3,
            latency_p99_us: percentile(&sorted, 99.0) as f64 / 1e3,
            latency_max_us: sorted.last().copied().unwrap_or(0) as f64 / 1e3,
            write_amplification: write_amplification(&self.counters),
        }
    }
}
