//! The SSD model's memory floor, for the speed benchmark: a loop over a request list that
//! does only the FTL map accesses any replay keeping a page map must do, on the maps of a
//! real, preconditioned `Ssd` (same sizes, same contents), and nothing else of the model.
//! Its rate bounds what the model's replay can reach on this machine.
//!
//! Per request, on top of the reference loop's work (read the request, derive a completion
//! time, store a latency, whose line it asks for ahead as the replay does):
//! - read: the logical-to-physical lookup at the request's address;
//! - write: that lookup (the old mapping), the old unit's invalidation (its reverse-map
//!   entry and its block's valid count), the new mapping in both maps, and, at the write
//!   amplification the model reported, GC copies: a victim unit's reverse-map entry read
//!   and cleared, the copy's new mapping in both maps (a random store into the page map).
//!
//! The lookup's result feeds the completion time, as in the model. Two forms:
//! `overlapped` lets the loads of later requests start before earlier ones return (their
//! addresses come from the list: it prefetches the lookup 16 requests ahead, the replay's
//! first hint; not its second, so a write's reverse-map and block loads overlap only as
//! far as the core's window reaches); `serialized`
//! makes each request's address wait on the previous completion, the latency-bound case of
//! a replay that overlaps nothing. The maps are not kept consistent (the write head and the
//! GC's victim scan just walk the physical space): only the cost of the accesses counts.

use std::time::Instant;

use crate::error::Result;
use crate::models::ssd::{Ssd, UNIT_BYTES};
use crate::models::DeviceModel;
use crate::params::Params;
use crate::request::{Op, Request};

const NIL: u32 = u32::MAX;

/// The maps of a preconditioned FTL, lent to the floor loop.
pub struct FloorMaps<'a> {
    pub l2p: &'a mut [u32],
    pub p2l: &'a mut [u32],
    /// Blocks' state: the floor touches each one's valid count.
    pub blocks: &'a mut [crate::models::ftl::Block],
    pub units_per_block: u32,
}

/// Build and precondition the SSD `params` describe, then time the floor loop over `reqs`
/// with `copies_per_write` GC copies per host write (write amplification - 1). Returns
/// the wall time of the loop alone, in ns.
pub fn floor_replay(params: &Params, reqs: &[Request], copies_per_write: f64, serialized: bool) -> Result<u128> {
    let mut ssd = Ssd::from_params(params)?;
    crate::replay::validate(reqs, ssd.capacity_bytes())?;
    ssd.precondition();
    let maps = ssd.ftl.floor_maps();
    let mut latencies = vec![0u64; reqs.len()];
    let t0 = Instant::now();
    let sum = if serialized {
        run::<true>(maps, reqs, copies_per_write, &mut latencies)
    } else {
        run::<false>(maps, reqs, copies_per_write, &mut latencies)
    };
    let wall = t0.elapsed().as_nanos();
    std::hint::black_box((sum, &latencies));
    Ok(wall)
}

/// The loop itself; returns the last completion time (so nothing is optimised away).
fn run<const SERIAL: bool>(m: FloorMaps<'_>, reqs: &[Request], copies_per_write: f64, lat: &mut [u64]) -> u64 {
    let FloorMaps { l2p, p2l, blocks, units_per_block } = m;
    let phys = p2l.len();
    let shift = units_per_block.trailing_zeros();
    // Block of a unit by shift when the block size is a power of two (it is in every
    // preset); otherwise a divide, which only makes the floor slower, never faster.
    let block_of = |u: u32| if units_per_block.is_power_of_two() { u >> shift } else { u / units_per_block };
    let next = |u: usize| if u + 1 == phys { 0 } else { u + 1 };
    let (mut head, mut scan) = (0usize, phys / 2);
    let mut credit = 0.0f64;
    let mut now = 0u64;
    for (i, r) in reqs.iter().enumerate() {
        if !SERIAL {
            // As the replay does: start the lookup of a request a few ahead.
            if let Some(a) = reqs.get(i + crate::replay::PREFETCH_AHEAD) {
                crate::models::prefetch_read(&l2p[(a.offset() / UNIT_BYTES) as usize]);
            }
        }
        // As the replay does, in both forms: the line of a latency stored further on (the
        // store is off the chain the serialized form makes each request wait on).
        crate::models::prefetch_at(lat.as_ptr().wrapping_add(i + crate::replay::LATENCIES_AHEAD));
        let mut lpn = (r.offset() / UNIT_BYTES) as usize;
        if SERIAL {
            // `now` stays far below 2^63, so this adds 0, but only once `now` is known.
            lpn += (now >> 63) as usize;
        }
        let old = match r.op {
            Op::Read => l2p[lpn],
            Op::Write => {
                let old = l2p[lpn];
                if old != NIL {
                    p2l[old as usize] = NIL;
                    let b = &mut blocks[block_of(old) as usize].valid;
                    *b = b.wrapping_sub(1);
                }
                p2l[head] = lpn as u32;
                l2p[lpn] = head as u32;
                head = next(head);
                credit += copies_per_write;
                while credit >= 1.0 {
                    credit -= 1.0;
                    // The victim scan: the next unit holding data (bounded, in case none does).
                    for _ in 0..phys {
                        let (src, moved) = (scan, p2l[scan]);
                        scan = next(scan);
                        if moved != NIL {
                            p2l[src] = NIL;
                            p2l[head] = moved;
                            l2p[moved as usize] = head as u32;
                            head = next(head);
                            break;
                        }
                    }
                }
                old
            }
            Op::Trim | Op::Flush => 0,
        };
        let done = now + 1000 + (old & 7) as u64;
        lat[i] = done - now;
        now = done;
    }
    now
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Value;

    fn params(over_provisioning: f64) -> Params {
        let mut p = Params::new();
        p.insert("capacity".into(), Value::Num((64u64 << 20) as f64));
        p.insert("over_provisioning".into(), Value::Num(over_provisioning));
        p.insert("precondition".into(), Value::Text("sequential".into()));
        p.insert("channels".into(), Value::Num(2.0));
        p.insert("dies_per_channel".into(), Value::Num(1.0));
        p
    }

    #[test]
    fn reads_see_the_preconditioned_map_and_writes_move_units() {
        let mut ssd = Ssd::from_params(&params(0.25)).unwrap();
        ssd.precondition();
        let reqs: Vec<Request> = (0..1000u64).map(|i| Request::new(0, Op::Write, (i * 7919 % 16384) * 8, 4096)).collect();
        let maps = ssd.ftl.floor_maps();
        let mut lat = vec![0; reqs.len()];
        let end = run::<false>(maps, &reqs, 1.0, &mut lat);
        // Every completion is 1000-1007 ns after the previous one.
        assert!(lat.iter().all(|&l| (1000..1008).contains(&l)));
        assert_eq!(end, lat.iter().sum::<u64>());
        let maps = ssd.ftl.floor_maps();
        // The last write's unit is mapped where the write head put it.
        let lpn = (reqs[999].offset() / UNIT_BYTES) as usize;
        assert_eq!(maps.p2l[maps.l2p[lpn] as usize], lpn as u32);
    }

    #[test]
    fn bad_requests_are_refused_before_timing() {
        let reqs = [Request::new(0, Op::Read, (64u64 << 20) / 512, 4096)];
        assert!(floor_replay(&params(0.25), &reqs, 0.0, false).is_err());
        let ok = [Request::new(0, Op::Read, 0, 4096)];
        assert!(floor_replay(&params(0.25), &ok, 0.0, true).is_ok());
    }
}
