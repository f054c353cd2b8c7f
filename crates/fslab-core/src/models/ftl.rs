//! Page-level flash translation layer, without timing: logical 4 KiB units mapped to
//! physical units, blocks grouped by plane, greedy garbage collection per plane when a
//! plane's free blocks fall to a threshold, and TRIM. The SSD model adds time on top.
//!
//! Planes stay balanced: a plane holding more than its share of the valid data has less
//! spare than the others, and greedy write amplification is convex in the spare, so an
//! unbalanced drive copies more than a balanced one (and a plane can even fill up). Host
//! data therefore goes to the less loaded of the next two planes (or dies) in turn, as an
//! FTL allocating by free space does; GC copies stay in their plane.
//!
//! Greedy GC takes, of a plane's closed blocks, one with the fewest valid units, and of
//! those the one that came to that count last. It finds it one of two ways, with the same
//! result, by the plane's size:
//! - Planes of up to `SCAN_BLOCKS` blocks: each block carries a stamp, on a clock of block
//!   events, of when it closed or last lost a unit, and GC scans the plane's blocks when
//!   it runs. An invalidation only stamps.
//! - Larger planes: closed blocks sit in per-plane buckets by valid-unit count (intrusive
//!   doubly linked lists, a block put at its bucket's head when it closes or loses a
//!   unit), with a per-plane lower bound on the smallest non-empty bucket, since counts
//!   only fall while a block is closed: O(1) amortised, but an invalidation, at nearly
//!   every host write, relinks its block.
//!
//! Measured (GC-bound 4 KiB random writes, the two alternating; 2026-12-04): with 80
//! blocks a plane the scan made the replay 1.3x faster, with 274 it was level, with 4,075
//! (one plane) 5x slower.

use crate::models::fastdiv::Divisor;
use crate::rng::Rng;

const NIL: u32 = u32::MAX;
/// Planes of up to this many blocks find GC's victim by a scan (see the module's note).
const SCAN_BLOCKS: u32 = 128;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcWork {
    /// Units copied out of victim blocks.
    pub moved_units: u64,
    pub erases: u64,
}

/// A block's state, in one place so that an invalidation or a GC copy touches one cache
/// line for it rather than one per field.
#[derive(Clone, Copy, Debug)]
pub struct Block {
    pub valid: u32,
    /// Next free unit (only meaningful for the active block).
    fill: u32,
    /// Links of the block's bucket list (while closed; planes GC does not scan).
    next: u32,
    prev: u32,
    /// When the block closed or its valid count last fell (`Ftl::clock`; planes GC
    /// scans): of two closed blocks with as few valid units, GC takes the later.
    stamp: u64,
    /// The block's plane (the hot path then needs no division for it).
    plane: u32,
    /// Closed = full, a GC candidate (listed in a bucket on planes GC does not scan).
    closed: bool,
}

pub struct Ftl {
    pub planes: u32,
    pub blocks_per_plane: u32,
    pub units_per_block: u32,
    pub logical_units: u64,
    /// GC runs on a plane once its free blocks drop below this.
    pub gc_free_blocks: u32,
    /// Divide by `units_per_block` and units per plane.
    per_block: Divisor,
    per_plane_units: Divisor,
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    blocks: Vec<Block>,
    /// GC finds its victim by a scan of the plane's blocks, not by the buckets.
    scan_victims: bool,
    /// The clock of `Block::stamp`, counting the events that stamp a block.
    clock: u64,
    bucket_head: Vec<u32>,
    min_hint: Vec<u32>,
    free: Vec<Vec<u32>>,
    active: Vec<u32>,
    /// Valid units per plane (for keeping the planes' shares balanced).
    plane_valid: Vec<u64>,
    // Counters (in units of 4 KiB unless named otherwise).
    pub host_units: u64,
    pub programmed_units: u64,
    pub gc_runs: u64,
    pub erases: u64,
    pub trimmed_units: u64,
    /// A plane ran out of free blocks (host writes are spread over planes as they come, so
    /// one plane can hold more than its share); set instead of panicking.
    pub exhausted: Option<u32>,
    /// (host_units, programmed_units) every `checkpoint_step` host units since the last
    /// reset, thinned (every other kept, step doubled) past CHECKPOINTS entries.
    checkpoints: Vec<(u64, u64)>,
    checkpoint_step: u64,
    /// The host unit count of the next checkpoint (a comparison per write, not a division).
    next_checkpoint: u64,
}

/// Enough checkpoints to place the half-way point within 1/512 of the host writes.
const CHECKPOINTS: usize = 1024;

impl Ftl {
    /// `physical blocks per plane` must leave at least `gc_free_blocks + 2` spare blocks
    /// per plane beyond the logical space (checked by the caller).
    pub fn new(planes: u32, blocks_per_plane: u32, units_per_block: u32, logical_units: u64, gc_free_blocks: u32) -> Self {
        let blocks = planes as usize * blocks_per_plane as usize;
        let phys = blocks * units_per_block as usize;
        let mut ftl = Ftl {
            planes,
            blocks_per_plane,
            units_per_block,
            logical_units,
            gc_free_blocks,
            per_block: Divisor::new(units_per_block),
            per_plane_units: Divisor::new(blocks_per_plane * units_per_block),
            l2p: vec![NIL; logical_units as usize],
            p2l: vec![NIL; phys],
            blocks: (0..blocks as u32)
                .map(|b| Block { valid: 0, fill: 0, next: NIL, prev: NIL, stamp: 0, plane: b / blocks_per_plane, closed: false })
                .collect(),
            scan_victims: blocks_per_plane <= SCAN_BLOCKS,
            clock: 0,
            bucket_head: vec![NIL; planes as usize * (units_per_block as usize + 1)],
            min_hint: vec![0; planes as usize],
            free: Vec::with_capacity(planes as usize),
            active: vec![NIL; planes as usize],
            plane_valid: vec![0; planes as usize],
            host_units: 0,
            programmed_units: 0,
            gc_runs: 0,
            erases: 0,
            trimmed_units: 0,
            exhausted: None,
            checkpoints: vec![(0, 0)],
            checkpoint_step: 1,
            next_checkpoint: 1,
        };
        for p in 0..planes {
            // Reverse so blocks are taken in ascending order (deterministic, readable).
            let list: Vec<u32> = (0..blocks_per_plane).rev().map(|b| p * blocks_per_plane + b).collect();
            ftl.free.push(list);
            let first = ftl.free[p as usize].pop().unwrap();
            ftl.active[p as usize] = first;
        }
        ftl
    }

    #[inline]
    pub fn plane_of_phys(&self, phys: u32) -> u32 {
        self.per_plane_units.div(phys)
    }

    /// Start loading the map entry of `lpn` into cache (see `DeviceModel::prefetch`).
    #[inline]
    pub fn prefetch(&self, lpn: u64) {
        if let Some(e) = self.l2p.get(lpn as usize) {
            crate::models::prefetch_read(e);
        }
    }

    /// Start loading what overwriting `lpn` touches: the reverse map entry of the unit it
    /// is mapped to and that unit's block. Reads the map entry `prefetch` asked for.
    #[inline]
    pub fn prefetch_mapped(&self, lpn: u64) {
        let Some(&phys) = self.l2p.get(lpn as usize) else { return };
        if let Some(e) = self.p2l.get(phys as usize) {
            crate::models::prefetch_read(e);
            crate::models::prefetch_read(&self.blocks[self.per_block.div(phys) as usize]);
        }
    }

    /// The maps, lent to the benchmark's memory floor (`models::floor`), which only
    /// times accesses to them and leaves them inconsistent: never use the FTL after.
    pub fn floor_maps(&mut self) -> crate::models::floor::FloorMaps<'_> {
        crate::models::floor::FloorMaps {
            l2p: &mut self.l2p,
            p2l: &mut self.p2l,
            blocks: &mut self.blocks,
            units_per_block: self.units_per_block,
        }
    }

    /// Physical unit holding `lpn`, if it holds data.
    #[inline]
    pub fn lookup(&self, lpn: u64) -> Option<u32> {
        let p = self.l2p[lpn as usize];
        (p != NIL).then_some(p)
    }

    pub fn free_blocks(&self, plane: u32) -> usize {
        self.free[plane as usize].len()
    }

    #[inline]
    fn bucket_index(&self, plane: u32, valid: u32) -> usize {
        plane as usize * (self.units_per_block as usize + 1) + valid as usize
    }

    #[inline]
    fn unlink(&mut self, b: u32) {
        let plane = self.blocks[b as usize].plane;
        let (n, p) = (self.blocks[b as usize].next, self.blocks[b as usize].prev);
        if p != NIL {
            self.blocks[p as usize].next = n;
        } else {
            let h = self.bucket_index(plane, self.blocks[b as usize].valid);
            self.bucket_head[h] = n;
        }
        if n != NIL {
            self.blocks[n as usize].prev = p;
        }
        self.blocks[b as usize].next = NIL;
        self.blocks[b as usize].prev = NIL;
    }

    #[inline]
    fn link(&mut self, b: u32) {
        let plane = self.blocks[b as usize].plane;
        let v = self.blocks[b as usize].valid;
        let h = self.bucket_index(plane, v);
        let old = self.bucket_head[h];
        self.blocks[b as usize].next = old;
        self.blocks[b as usize].prev = NIL;
        if old != NIL {
            self.blocks[old as usize].prev = b;
        }
        self.bucket_head[h] = b;
        let hint = &mut self.min_hint[plane as usize];
        if v < *hint {
            *hint = v;
        }
    }

    /// Closed block `b` of `plane`, holding `v` valid units before, lost one: move it to
    /// the head of the next lower bucket. The same as `unlink`, the count's decrement and
    /// `link`, without their repeated index arithmetic and the stores `link` overwrites.
    #[inline]
    fn demote(&mut self, b: u32, plane: u32, v: u32, n: u32, p: u32) {
        let from = self.bucket_index(plane, v);
        if p != NIL {
            self.blocks[p as usize].next = n;
        } else {
            self.bucket_head[from] = n;
        }
        if n != NIL {
            self.blocks[n as usize].prev = p;
        }
        // Bucket v - 1 of the plane is the slot just below bucket v.
        let old = self.bucket_head[from - 1];
        let blk = &mut self.blocks[b as usize];
        (blk.valid, blk.next, blk.prev) = (v - 1, old, NIL);
        if old != NIL {
            self.blocks[old as usize].prev = b;
        }
        self.bucket_head[from - 1] = b;
        let hint = &mut self.min_hint[plane as usize];
        if v - 1 < *hint {
            *hint = v - 1;
        }
    }

    /// Valid units of the least and the most loaded of `n` planes from `first` on.
    #[inline]
    pub fn load_range(&self, first: u32, n: u32) -> (u64, u64) {
        let loads = &self.plane_valid[first as usize..(first + n) as usize];
        loads.iter().fold((u64::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)))
    }

    /// Valid units of the most loaded of `n` planes from `first` on.
    #[inline]
    pub fn load(&self, first: u32, n: u32) -> u64 {
        self.plane_valid[first as usize..(first + n) as usize].iter().copied().max().unwrap_or(0)
    }

    #[inline(always)]
    fn invalidate(&mut self, phys: u32) {
        let b = self.per_block.div(phys);
        self.p2l[phys as usize] = NIL;
        let blk = &mut self.blocks[b as usize];
        let plane = blk.plane;
        self.plane_valid[plane as usize] -= 1;
        if blk.closed && !self.scan_victims {
            let (v, n, p) = (blk.valid, blk.next, blk.prev);
            self.demote(b, plane, v, n, p);
        } else {
            blk.valid -= 1;
            // Stamped whether closed or not: only closed blocks' stamps are compared, and
            // a block that closes is stamped then.
            blk.stamp = self.clock;
            self.clock += 1;
        }
    }

    /// Put `lpn` in the next free unit of `plane`'s active block; opens a new block when
    /// it fills. Returns the physical unit.
    #[inline]
    fn place(&mut self, lpn: u32, plane: u32) -> u32 {
        let b = self.active[plane as usize];
        let slot = self.blocks[b as usize].fill;
        let phys = b * self.units_per_block + slot;
        self.p2l[phys as usize] = lpn;
        self.l2p[lpn as usize] = phys;
        self.blocks[b as usize].valid += 1;
        self.blocks[b as usize].fill = slot + 1;
        self.programmed_units += 1;
        self.plane_valid[plane as usize] += 1;
        if slot + 1 == self.units_per_block {
            self.close_active(plane, b);
        }
        phys
    }

    /// `plane`'s active block `b` is full: list it as a GC candidate and open the next
    /// free block.
    fn close_active(&mut self, plane: u32, b: u32) {
        self.blocks[b as usize].closed = true;
        if self.scan_victims {
            self.blocks[b as usize].stamp = self.clock;
            self.clock += 1;
        } else {
            self.link(b);
        }
        let nb = match self.free[plane as usize].pop() {
            Some(nb) => nb,
            None => {
                // Keep the maps consistent with a block of the plane with most free
                // blocks; the replay then reports the error (`Ssd::error`).
                self.exhausted.get_or_insert(plane);
                let donor = (0..self.planes).max_by_key(|&p| self.free[p as usize].len()).unwrap_or(plane);
                match self.free[donor as usize].pop() {
                    Some(nb) => nb,
                    // Unreachable: valid units never exceed the logical units, which
                    // leave planes x (gc_free_blocks + 2) blocks spare (Ssd::new).
                    None => b,
                }
            }
        };
        self.active[plane as usize] = nb;
    }

    /// Host write of one logical unit to `plane`. Runs GC on that plane if needed.
    #[inline]
    pub fn write(&mut self, lpn: u64, plane: u32) -> GcWork {
        let old = self.l2p[lpn as usize];
        if old != NIL {
            self.invalidate(old);
        }
        self.host_units += 1;
        self.place(lpn as u32, plane);
        if self.host_units == self.next_checkpoint {
            self.checkpoint();
        }
        let mut work = GcWork::default();
        while self.free[plane as usize].len() < self.gc_free_blocks as usize {
            if !self.collect(plane, &mut work) {
                break;
            }
        }
        work
    }

    /// One greedy GC run on `plane`: copy the valid units of the closed block with the
    /// fewest, then erase it. Returns false if nothing can be reclaimed.
    fn collect(&mut self, plane: u32, work: &mut GcWork) -> bool {
        let upb = self.units_per_block;
        let victim = if self.scan_victims { self.scanned_victim(plane) } else { self.listed_victim(plane) };
        let Some(victim) = victim else {
            return false; // every closed block is full of valid data
        };
        let v = self.blocks[victim as usize].valid;
        // The victim's valid units move within the plane (`place` counts them again).
        self.plane_valid[plane as usize] -= v as u64;
        self.blocks[victim as usize].closed = false;
        // `place` for each valid unit, with the active block's counts summed in registers
        // and stored when it fills or the victim is done (nothing reads them in between).
        let units = (victim * upb) as usize..((victim + 1) * upb) as usize;
        // (Checked once here, so the loop's reads of the victim's units need no check.)
        assert!(units.end <= self.p2l.len());
        let mut b = self.active[plane as usize];
        let mut slot = self.blocks[b as usize].fill;
        let mut first = slot;
        for u in units.clone() {
            let lpn = self.p2l[u];
            if lpn == NIL {
                continue;
            }
            let phys = b * upb + slot;
            self.p2l[phys as usize] = lpn;
            self.l2p[lpn as usize] = phys;
            slot += 1;
            if slot == upb {
                self.account_placed(plane, b, slot, slot - first);
                self.close_active(plane, b);
                b = self.active[plane as usize];
                slot = self.blocks[b as usize].fill;
                first = slot;
            }
        }
        self.account_placed(plane, b, slot, slot - first);
        // Every unit of the victim is free now (its valid ones moved, the rest were).
        self.p2l[units].fill(NIL);
        work.moved_units += v as u64;
        work.erases += 1;
        self.blocks[victim as usize].valid = 0;
        self.blocks[victim as usize].fill = 0;
        self.free[plane as usize].push(victim);
        self.gc_runs += 1;
        self.erases += 1;
        true
    }

    /// GC's victim on `plane` by the buckets, taken out of its bucket (None: every closed
    /// block is full).
    fn listed_victim(&mut self, plane: u32) -> Option<u32> {
        let upb = self.units_per_block;
        let mut v = self.min_hint[plane as usize];
        while v < upb && self.bucket_head[self.bucket_index(plane, v)] == NIL {
            v += 1;
        }
        self.min_hint[plane as usize] = v;
        if v >= upb {
            return None;
        }
        let victim = self.bucket_head[self.bucket_index(plane, v)];
        self.unlink(victim);
        Some(victim)
    }

    /// GC's victim on `plane` by a scan of its blocks: of the closed ones with fewer valid
    /// units than a block holds, one with the fewest, the latest stamped of those.
    fn scanned_victim(&self, plane: u32) -> Option<u32> {
        let first = plane as usize * self.blocks_per_plane as usize;
        let blocks = &self.blocks[first..first + self.blocks_per_plane as usize];
        // The order as one number: fewer valid units first, then the later stamp (stamps
        // are unique, so one block wins). An open block ranks last.
        let rank = |b: &Block| if b.closed { ((b.valid as u128) << 64) | (!b.stamp) as u128 } else { u128::MAX };
        let (i, best) = blocks.iter().enumerate().min_by_key(|(_, b)| rank(b))?;
        (best.closed && best.valid < self.units_per_block).then_some((first + i) as u32)
    }

    /// The counts `place` keeps, for `placed` units put in `plane`'s block `b`, now filled
    /// up to `fill`.
    #[inline]
    fn account_placed(&mut self, plane: u32, b: u32, fill: u32, placed: u32) {
        self.blocks[b as usize].valid += placed;
        self.blocks[b as usize].fill = fill;
        self.programmed_units += placed as u64;
        self.plane_valid[plane as usize] += placed as u64;
    }

    pub fn trim(&mut self, lpn: u64) {
        let old = self.l2p[lpn as usize];
        if old != NIL {
            self.invalidate(old);
            self.l2p[lpn as usize] = NIL;
            self.trimmed_units += 1;
        }
    }

    /// Fill every logical unit once, in order, striped over the planes: the state after
    /// a sequential fill, built without simulating any time.
    pub fn fill_sequential(&mut self) {
        for lpn in 0..self.logical_units {
            self.write(lpn, (lpn % self.planes as u64) as u32);
        }
    }

    /// Overwrite `passes` times the logical space with uniform random units (timing-free),
    /// to the planes in turn as the host's data goes (the less loaded of the next two):
    /// after two or three passes greedy GC is at its steady state.
    pub fn overwrite_random(&mut self, passes: f64, rng: &mut Rng) {
        let n = (passes * self.logical_units as f64) as u64;
        let planes = self.planes;
        let next = |p: u32| if p + 1 == planes { 0 } else { p + 1 };
        let mut plane = 0;
        for _ in 0..n {
            let lpn = rng.below(self.logical_units);
            let other = next(plane);
            if self.load(other, 1) < self.load(plane, 1) {
                plane = other;
            }
            self.write(lpn, plane);
            plane = next(plane);
        }
    }

    fn checkpoint(&mut self) {
        self.checkpoints.push((self.host_units, self.programmed_units));
        if self.checkpoints.len() > CHECKPOINTS {
            let kept: Vec<(u64, u64)> = self.checkpoints.iter().copied().step_by(2).collect();
            self.checkpoints = kept;
            self.checkpoint_step *= 2;
        }
        // The next multiple of the step (the host units count one by one).
        self.next_checkpoint = (self.host_units / self.checkpoint_step + 1) * self.checkpoint_step;
    }

    /// Write amplification over the second half of the host writes since the last reset
    /// (the steady-state window: the warm-up after preconditioning is left out), and the
    /// window's host units. None before any host write.
    pub fn steady_write_amplification(&self) -> Option<(f64, u64)> {
        let half = self.host_units / 2;
        let &(h0, p0) = self.checkpoints.iter().find(|&&(h, _)| h >= half)?;
        let host = self.host_units.checked_sub(h0).filter(|&h| h > 0)?;
        Some(((self.programmed_units - p0) as f64 / host as f64, host))
    }

    pub fn reset_counters(&mut self) {
        self.checkpoints = vec![(0, 0)];
        self.checkpoint_step = 1;
        self.next_checkpoint = 1;
        self.host_units = 0;
        self.programmed_units = 0;
        self.gc_runs = 0;
        self.erases = 0;
        self.trimmed_units = 0;
    }

    /// Consistency check for tests: maps agree and valid counts match.
    #[cfg(test)]
    pub fn check(&self) {
        let mut valid = vec![0u32; self.blocks.len()];
        for (lpn, &phys) in self.l2p.iter().enumerate() {
            if phys != NIL {
                assert_eq!(self.p2l[phys as usize], lpn as u32);
                valid[(phys / self.units_per_block) as usize] += 1;
            }
        }
        assert_eq!(valid, self.blocks.iter().map(|b| b.valid).collect::<Vec<u32>>());
        let per_plane: Vec<u64> = (0..self.planes as usize)
            .map(|p| valid[p * self.blocks_per_plane as usize..(p + 1) * self.blocks_per_plane as usize].iter().map(|&v| v as u64).sum())
            .collect();
        assert_eq!(per_plane, self.plane_valid);
        if self.scan_victims {
            // Closed blocks' stamps are unique (so the victim is one block) and in the past.
            let mut stamps: Vec<u64> = self.blocks.iter().filter(|b| b.closed).map(|b| b.stamp).collect();
            stamps.sort_unstable();
            assert!(stamps.windows(2).all(|w| w[0] < w[1]), "two closed blocks share a stamp");
            assert!(stamps.last().is_none_or(|&s| s < self.clock));
            return;
        }
        // Every closed block sits, once, in its plane's bucket of its valid count, with
        // both links consistent, and no bucket below the plane's hint holds a block.
        let mut listed = 0;
        for plane in 0..self.planes {
            for v in 0..=self.units_per_block {
                let (mut b, mut prev) = (self.bucket_head[self.bucket_index(plane, v)], NIL);
                while b != NIL {
                    assert!(self.blocks[b as usize].closed && self.blocks[b as usize].valid == v, "block {b} in bucket {v}");
                    assert_eq!((b / self.blocks_per_plane, self.blocks[b as usize].prev), (plane, prev));
                    assert!(v >= self.min_hint[plane as usize], "plane {plane}: bucket {v} below the hint");
                    listed += 1;
                    (prev, b) = (b, self.blocks[b as usize].next);
                }
            }
        }
        assert_eq!(listed, self.blocks.iter().filter(|b| b.closed).count());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_stay_consistent_under_gc_and_trim() {
        let mut ftl = Ftl::new(2, 40, 16, 2 * 32 * 16, 1);
        ftl.fill_sequential();
        let mut rng = Rng::new(3);
        ftl.overwrite_random(3.0, &mut rng);
        for lpn in 0..50 {
            ftl.trim(lpn);
        }
        ftl.overwrite_random(1.0, &mut rng);
        ftl.check();
        assert!(ftl.gc_runs > 0);
        assert_eq!(ftl.programmed_units, ftl.host_units + (ftl.programmed_units - ftl.host_units));
    }

    #[test]
    fn steady_window_is_the_second_half_of_the_host_writes() {
        let mut ftl = Ftl::new(1, 40, 16, 32 * 16, 1);
        assert_eq!(ftl.steady_write_amplification(), None);
        ftl.fill_sequential();
        ftl.reset_counters();
        let mut rng = Rng::new(9);
        ftl.overwrite_random(4.0, &mut rng);
        let (wa, host) = ftl.steady_write_amplification().unwrap();
        // Checkpoints are thinned, so the window starts within 1/512 of the half-way point.
        let total = ftl.host_units;
        assert!(host <= total / 2 + 1 && host + total / 512 + 1 >= total / 2, "{host} of {total}");
        let whole = ftl.programmed_units as f64 / total as f64;
        assert!(wa > 1.0 && (wa - whole).abs() / whole < 0.2, "steady {wa}, whole {whole}");
    }

    #[test]
    fn random_overwrites_keep_the_planes_shares_balanced() {
        // 4 planes of 40 blocks, 7 of them spare: in turn regardless of load, a plane's
        // share wanders by ~1.4 blocks; the less loaded of two keeps it within a few units.
        let mut ftl = Ftl::new(4, 40, 32, 4 * 33 * 32, 2);
        ftl.fill_sequential();
        let mut rng = Rng::new(4);
        ftl.overwrite_random(10.0, &mut rng);
        ftl.check();
        let (lo, hi) = (ftl.plane_valid.iter().min().unwrap(), ftl.plane_valid.iter().max().unwrap());
        assert!(hi - lo <= 8, "{:?}", ftl.plane_valid);
        assert!(ftl.exhausted.is_none());
    }

    #[test]
    fn victim_has_the_fewest_valid_units_and_of_those_came_to_it_last() {
        // One plane of 8 blocks of 4 units: a sequential fill closes blocks 0-3 full.
        let mut ftl = Ftl::new(1, 8, 4, 16, 1);
        assert!(ftl.scan_victims);
        ftl.fill_sequential();
        assert_eq!(ftl.scanned_victim(0), None, "every closed block is full");
        ftl.write(0, 0); // block 0 down to 3 valid
        ftl.write(4, 0); // block 1 down to 3 valid, later
        assert_eq!(ftl.scanned_victim(0), Some(1));
        ftl.write(8, 0); // block 2 down to 3, later still
        assert_eq!(ftl.scanned_victim(0), Some(2));
        ftl.write(1, 0); // block 0 down to 2: the fewest
        assert_eq!(ftl.scanned_victim(0), Some(0));
        ftl.write(5, 0); // block 1 down to 2, later than block 0
        assert_eq!(ftl.scanned_victim(0), Some(1));
        ftl.check();
    }

    #[test]
    fn the_scan_and_the_buckets_pick_the_same_victims() {
        // The same writes and trims on two FTLs, one finding victims each way: every GC
        // run must have taken the same block, so the maps end equal.
        let run = |scan: bool| {
            let mut ftl = Ftl::new(3, 40, 16, 3 * 33 * 16, 2);
            ftl.scan_victims = scan;
            ftl.fill_sequential();
            let mut rng = Rng::new(11);
            ftl.overwrite_random(3.0, &mut rng);
            for lpn in (0..400).step_by(3) {
                ftl.trim(lpn);
            }
            ftl.overwrite_random(2.0, &mut rng);
            ftl.check();
            assert!(ftl.gc_runs > 100);
            ftl
        };
        let (scanned, listed) = (run(true), run(false));
        assert_eq!(scanned.l2p, listed.l2p);
        assert_eq!(scanned.p2l, listed.p2l);
        assert_eq!((scanned.gc_runs, scanned.programmed_units), (listed.gc_runs, listed.programmed_units));
        // A plane of more than SCAN_BLOCKS blocks keeps the buckets.
        assert!(!Ftl::new(1, SCAN_BLOCKS + 1, 4, 64, 1).scan_victims);
    }

    #[test]
    fn sequential_overwrite_needs_no_copies() {
        let mut ftl = Ftl::new(1, 20, 8, 16 * 8, 1);
        ftl.fill_sequential();
        ftl.reset_counters();
        ftl.fill_sequential();
        // Whole blocks become invalid together, so greedy GC erases without copying.
        assert_eq!(ftl.programmed_units, ftl.host_units);
        assert!(ftl.erases > 0);
    }
}
