//! Synthetic request streams (fio-like: rw, bs, count, span, seed), used in place of a
//! trace for validation and what-if questions. Same spec and seed, same stream.

use crate::error::{CoreError, Result};
use crate::request::{Ns, Op, Request, SECTOR_BYTES};
use crate::rng::Rng;

#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticSpec {
    /// read | write | randread | randwrite | randrw | rw | trim | randtrim
    pub rw: String,
    pub bs: u64,
    pub count: u64,
    /// Bytes of the device the stream touches, starting at `offset`.
    pub span: u64,
    pub offset: u64,
    pub seed: u64,
    /// Percentage of reads in mixed streams (randrw, rw), 0–100.
    pub rwmixread: f64,
    /// Open-loop issue rate, requests per second (0: all at time 0). Poisson if `poisson`.
    pub rate_iops: f64,
    pub poisson: bool,
    /// Insert a flush after every this many writes (0: never), like fio's fsync=N.
    pub fsync_every: u64,
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        SyntheticSpec {
            rw: "randread".into(),
            bs: 4096,
            count: 10_000,
            span: 1 << 30,
            offset: 0,
            seed: 1,
            rwmixread: 50.0,
            rate_iops: 0.0,
            poisson: false,
            fsync_every: 0,
        }
    }
}

pub fn generate(spec: &SyntheticSpec) -> Result<Vec<Request>> {
    let bad = |m: String| Err(CoreError::BadSynthetic(m));
    if spec.bs == 0 || !spec.bs.is_multiple_of(SECTOR_BYTES) {
        return bad(format!("bs={} must be a positive multiple of 512 bytes", spec.bs));
    }
    if spec.span < spec.bs {
        return bad(format!("span={} is smaller than bs={}", spec.span, spec.bs));
    }
    if !spec.offset.is_multiple_of(SECTOR_BYTES) {
        return bad("offset must be a multiple of 512 bytes".into());
    }
    // 0 is no rate: every request at time 0.
    if !(spec.rate_iops.is_finite() && spec.rate_iops >= 0.0) {
        return bad(format!("rate_iops={} must be a finite number of requests/s, not negative (0: no rate, every request at time 0)", spec.rate_iops));
    }
    if !(0.0..=100.0).contains(&spec.rwmixread) {
        return bad(format!("rwmixread={} must be a percentage of reads, 0 to 100", spec.rwmixread));
    }
    let (random, kind) = match spec.rw.as_str() {
        "read" => (false, 'r'),
        "write" => (false, 'w'),
        "rw" | "readwrite" => (false, 'm'),
        "randread" => (true, 'r'),
        "randwrite" => (true, 'w'),
        "randrw" => (true, 'm'),
        "trim" => (false, 't'),
        "randtrim" => (true, 't'),
        other => return bad(format!("rw={other:?}; use read, write, rw, randread, randwrite, randrw, trim or randtrim")),
    };
    let mut rng = Rng::new(spec.seed);
    let slots = spec.span / spec.bs;
    let mut out = Vec::with_capacity(spec.count as usize);
    let mut t: f64 = 0.0;
    let gap_ns = if spec.rate_iops > 0.0 { 1e9 / spec.rate_iops } else { 0.0 };
    let mut writes = 0u64;
    for i in 0..spec.count {
        let slot = if random { rng.below(slots) } else { i % slots };
        let op = match kind {
            'r' => Op::Read,
            'w' => Op::Write,
            't' => Op::Trim,
            _ => {
                if rng.unit() * 100.0 < spec.rwmixread {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        let time_ns = t.round() as Ns;
        out.push(Request::new(time_ns, op, (spec.offset + slot * spec.bs) / SECTOR_BYTES, spec.bs));
        if op == Op::Write {
            writes += 1;
            if spec.fsync_every > 0 && writes.is_multiple_of(spec.fsync_every) {
                out.push(Request::new(time_ns, Op::Flush, 0, 0));
            }
        }
        t += if spec.poisson { -gap_ns * (1.0 - rng.unit()).ln() } else { gap_ns };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_in_range() {
        let spec = SyntheticSpec { rw: "randrw".into(), count: 1000, span: 1 << 20, ..Default::default() };
        let a = generate(&spec).unwrap();
        assert_eq!(a, generate(&spec).unwrap());
        assert!(a.iter().all(|r| r.offset() + r.bytes <= 1 << 20 && r.offset() % 4096 == 0));
        let reads = a.iter().filter(|r| r.op == Op::Read).count();
        assert!((400..600).contains(&reads));
    }

    #[test]
    fn sequential_wraps_in_span() {
        let spec = SyntheticSpec { rw: "write".into(), count: 5, span: 3 * 4096, ..Default::default() };
        let sectors: Vec<u64> = generate(&spec).unwrap().iter().map(|r| r.sector).collect();
        assert_eq!(sectors, vec![0, 8, 16, 0, 8]);
    }
}
