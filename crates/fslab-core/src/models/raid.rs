//! RAID0 and RAID5 over N member models (any kind, built from the `member.*` parameters).
//!
//! Chunks are laid out round-robin; RAID5 uses the left-symmetric layout (parity of
//! stripe s on member N-1 - s mod N, data chunks following it cyclically). A write that
//! covers a whole stripe writes data and parity with no reads; a partial one chooses
//! read-modify-write (read old data and parity, write both) or reconstruct-write (read
//! the untouched data, write new data and parity), whichever needs fewer member I/Os.
//!
//! The controller's host link is a serial resource every host byte crosses once: write
//! data on its way in (before a cached write is acknowledged), read data on its way out
//! (after the members delivered it). Its rate is `link_mb_per_s`; unset (0), the members'
//! own links together (software RAID has no link of its own; nothing is faster than them).
//!
//! Member completions and wake-ups come back through the outer context as wake tokens:
//! low bit 0 = completion of sub-I/O (token >> 1), low bit 1 = a member's own wake-up.

use crate::engine::Ctx;
use crate::error::{CoreError, Result};
use crate::models::{build, Counters, DeviceModel, Kind, Mechanism, Mechanisms};
use crate::params::{sub_params, ParamReader, Params};
use crate::request::{Ns, Op, Request, SECTOR_BYTES};

/// The RAID model in the kind table (`crate::models::KINDS`): `CAUSES` in order, then the
/// controller's host link.
pub const KIND: Kind = Kind {
    name: "raid",
    build: |p| Ok(Box::new(Raid::from_params(p)?)),
    mechanisms: &[
        Mechanism { name: "data_read", cause: "member data reads" },
        Mechanism { name: "data_write", cause: "member data writes" },
        Mechanism { name: "full_stripe_write", cause: "full-stripe writes" },
        Mechanism { name: "parity_rmw_read", cause: "parity read-modify-write" },
        Mechanism { name: "parity_rmw_write", cause: "parity read-modify-write" },
        Mechanism { name: "reconstruct_read", cause: "parity reconstruct-write" },
        Mechanism { name: "reconstruct_write", cause: "parity reconstruct-write" },
        Mechanism { name: "trim", cause: "trims" },
        Mechanism { name: "flush", cause: "flushes" },
        Mechanism { name: "host_link", cause: "host-link transfer" },
    ],
    whole: "the summed time of the member I/Os (issue to completion), by why the array sent them, \
            plus the controller's host link",
    offered: true,
};

/// One piece of a stripe: (data member index, offset in its chunk, length), in bytes.
type Piece = (u64, u64, u64);

struct MemberCtx<'a> {
    outer: &'a mut dyn Ctx,
    member: u64,
    members: u64,
}

impl Ctx for MemberCtx<'_> {
    fn complete(&mut self, tag: u64, at: Ns) {
        self.outer.wake_at(at, tag << 1);
    }
    fn wake_at(&mut self, at: Ns, token: u64) {
        self.outer.wake_at(at, ((token * self.members + self.member) << 1) | 1);
    }
}

/// Why the array sent a member I/O: the mechanisms of `Raid::time_by_mechanism`, by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Cause {
    DataRead,
    DataWrite,
    FullStripeWrite,
    RmwRead,
    RmwWrite,
    RcwRead,
    RcwWrite,
    Trim,
    Flush,
}

/// Mechanism names, in `Cause` order.
const CAUSES: [&str; 9] = [
    "data_read",
    "data_write",
    "full_stripe_write",
    "parity_rmw_read",
    "parity_rmw_write",
    "reconstruct_read",
    "reconstruct_write",
    "trim",
    "flush",
];

/// One stripe's share of a host request, done in up to two phases (reads, then writes).
struct Part {
    parent: u32,
    outstanding: u32,
    writes: Vec<(u32, u64, u64)>,
    /// Why the second-phase `writes` are sent.
    writes_cause: Cause,
}

struct Parent {
    tag: u64,
    parts: u32,
    /// Completion is reported no earlier than this (write data over the link, controller
    /// cache latency).
    min_done: Ns,
    /// Bytes to send to the host once the members delivered them (reads).
    read_bytes: u64,
}

/// Parent of destages the host does not wait for.
const BACKGROUND: u32 = u32::MAX;

/// Dirty 4 KiB units of one stripe in the controller's write-back cache.
struct DirtyStripe {
    bits: Vec<u64>,
    units: u64,
}

pub struct Raid {
    level: u32,
    chunk: u64,
    members: Vec<Box<dyn DeviceModel>>,
    member_capacity: u64,
    parts: Vec<Part>,
    free_parts: Vec<u32>,
    parents: Vec<Parent>,
    free_parents: Vec<u32>,
    /// Sub-I/O slot -> part index.
    subs: Vec<u32>,
    /// Sub-I/O slot -> (issue time, why it was sent).
    sub_meta: Vec<(Ns, Cause)>,
    /// Member-I/O time per `Cause`, ns.
    cause_ns: [u64; CAUSES.len()],
    free_subs: Vec<u32>,
    cache_bytes: u64,
    cache_latency_ns: Ns,
    /// The controller's host link, decimal MB/s (stated, or the members' links together).
    link_mb_per_s: f64,
    link_free: Ns,
    link_ns_total: u64,
    dirty: std::collections::HashMap<u64, DirtyStripe>,
    dirty_order: std::collections::VecDeque<u64>,
    dirty_units: u64,
    host_write_bytes: u64,
    host_read_bytes: u64,
    destages: u64,
    member_reads: u64,
    member_writes: u64,
    member_read_bytes: u64,
    member_write_bytes: u64,
    full_stripe_writes: u64,
    rmw_writes: u64,
    rcw_writes: u64,
}

impl Raid {
    pub fn from_params(params: &Params) -> Result<Self> {
        let r = ParamReader::new(KIND.name, params).with_foreign_prefix("member.");
        let level = r.int("level", 5, 0, 5)? as u32;
        let n = r.int("members", 8, 2, 1024)? as usize;
        let chunk = r.int("chunk_bytes", 512 << 10, 4096, 1 << 30)?;
        let cache_bytes = r.int("cache_bytes", 0, 0, 1 << 40)?;
        let cache_latency_ns = r.ns("cache_latency_ns", 20_000)?;
        // 0: the members' links together (see the module docs).
        let stated_link = r.num("link_mb_per_s", 0.0, 0.0, 1e7)?;
        r.finish()?;
        if level != 0 && level != 5 {
            return Err(CoreError::BadParam { name: "level".into(), reason: "only RAID0 and RAID5 are modelled".into() });
        }
        if level == 5 && n < 3 {
            return Err(CoreError::BadParam { name: "members".into(), reason: "RAID5 needs at least 3 members".into() });
        }
        if chunk % 4096 != 0 {
            return Err(CoreError::BadParam { name: "chunk_bytes".into(), reason: "must be a multiple of 4096".into() });
        }
        let mp = sub_params(params, "member.");
        let mut members = Vec::with_capacity(n);
        for i in 0..n {
            let mut p = mp.clone();
            // Distinct seeds per member, derived from the member seed, keep runs reproducible.
            if let Some(crate::params::Value::Num(s)) = p.get("seed").cloned() {
                p.insert("seed".into(), crate::params::Value::Num(s + i as f64));
            }
            members.push(build(&p)?);
        }
        let member_capacity = members[0].capacity_bytes() / chunk * chunk;
        let link_mb_per_s = if stated_link > 0.0 {
            stated_link
        } else {
            members.iter().map(|m| m.facts().get("link_mb_per_s").copied().unwrap_or(f64::INFINITY)).sum()
        };
        Ok(Raid {
            link_mb_per_s,
            link_free: 0,
            link_ns_total: 0,
            level,
            chunk,
            members,
            member_capacity,
            cache_bytes,
            cache_latency_ns,
            dirty: Default::default(),
            dirty_order: Default::default(),
            dirty_units: 0,
            destages: 0,
            parts: Vec::new(),
            free_parts: Vec::new(),
            parents: Vec::new(),
            free_parents: Vec::new(),
            subs: Vec::new(),
            sub_meta: Vec::new(),
            cause_ns: [0; CAUSES.len()],
            free_subs: Vec::new(),
            host_write_bytes: 0,
            host_read_bytes: 0,
            member_reads: 0,
            member_writes: 0,
            member_read_bytes: 0,
            member_write_bytes: 0,
            full_stripe_writes: 0,
            rmw_writes: 0,
            rcw_writes: 0,
        })
    }

    /// Move `bytes` over the controller's host link from `ready` on (once the link is
    /// free); returns when the transfer ends.
    fn link_transfer(&mut self, ready: Ns, bytes: u64) -> Ns {
        if !self.link_mb_per_s.is_finite() {
            return ready;
        }
        let link = (bytes as f64 * 1000.0 / self.link_mb_per_s).round() as Ns;
        self.link_ns_total += link;
        let end = ready.max(self.link_free) + link;
        self.link_free = end;
        end
    }

    fn data_members(&self) -> u64 {
        self.members.len() as u64 - if self.level == 5 { 1 } else { 0 }
    }

    /// Member holding data chunk `i` of stripe `s`, and the parity member (RAID5).
    fn layout(&self, s: u64, i: u64) -> (u64, u64) {
        let n = self.members.len() as u64;
        if self.level == 0 {
            return (i, u64::MAX);
        }
        let parity = n - 1 - s % n;
        ((parity + 1 + i) % n, parity)
    }

    fn new_parent(&mut self, tag: u64) -> u32 {
        let p = Parent { tag, parts: 0, min_done: 0, read_bytes: 0 };
        if let Some(i) = self.free_parents.pop() {
            self.parents[i as usize] = p;
            i
        } else {
            self.parents.push(p);
            self.parents.len() as u32 - 1
        }
    }

    fn new_part(&mut self, parent: u32) -> u32 {
        if parent != BACKGROUND {
            self.parents[parent as usize].parts += 1;
        }
        let p = Part { parent, outstanding: 0, writes: Vec::new(), writes_cause: Cause::DataWrite };
        if let Some(i) = self.free_parts.pop() {
            self.parts[i as usize] = p;
            i
        } else {
            self.parts.push(p);
            self.parts.len() as u32 - 1
        }
    }

    #[allow(clippy::too_many_arguments)] // one member I/O is fully described by these
    fn issue(&mut self, now: Ns, part: u32, member: u32, op: Op, offset: u64, bytes: u64, cause: Cause, ctx: &mut dyn Ctx) {
        let sub = if let Some(i) = self.free_subs.pop() {
            self.subs[i as usize] = part;
            self.sub_meta[i as usize] = (now, cause);
            i
        } else {
            self.subs.push(part);
            self.sub_meta.push((now, cause));
            self.subs.len() as u32 - 1
        };
        self.parts[part as usize].outstanding += 1;
        match op {
            Op::Read => {
                self.member_reads += 1;
                self.member_read_bytes += bytes;
            }
            Op::Write => {
                self.member_writes += 1;
                self.member_write_bytes += bytes;
            }
            _ => {}
        }
        let req = Request::new(now, op, offset / SECTOR_BYTES, bytes);
        let members = self.members.len() as u64;
        let mut mctx = MemberCtx { outer: ctx, member: member as u64, members };
        self.members[member as usize].submit(now, sub as u64, &req, &mut mctx);
    }

    fn part_done(&mut self, now: Ns, part: u32, ctx: &mut dyn Ctx) {
        let writes = std::mem::take(&mut self.parts[part as usize].writes);
        if !writes.is_empty() {
            let cause = self.parts[part as usize].writes_cause;
            for (m, off, len) in writes {
                self.issue(now, part, m, Op::Write, off, len, cause, ctx);
            }
            return;
        }
        let parent = self.parts[part as usize].parent;
        self.free_parts.push(part);
        if parent == BACKGROUND {
            return;
        }
        let pa = &mut self.parents[parent as usize];
        pa.parts -= 1;
        if pa.parts == 0 {
            let (tag, mut done, read_bytes) = (pa.tag, now.max(pa.min_done), pa.read_bytes);
            if read_bytes > 0 {
                done = self.link_transfer(done, read_bytes);
            }
            ctx.complete(tag, done);
            self.free_parents.push(parent);
        }
    }

    /// Member I/Os for writing `pieces` (data index, offset in chunk, length) of `stripe`.
    fn write_stripe(&mut self, now: Ns, part: u32, stripe: u64, pieces: &[(u64, u64, u64)], ctx: &mut dyn Ctx) {
        let chunk = self.chunk;
        let base = stripe * chunk;
        if self.level == 0 {
            for &(idx, within, len) in pieces {
                let (m, _) = self.layout(stripe, idx);
                self.issue(now, part, m as u32, Op::Write, base + within, len, Cause::DataWrite, ctx);
            }
            return;
        }
        let dm = self.data_members();
        let covered: u64 = pieces.iter().map(|p| p.2).sum();
        let (_, parity) = self.layout(stripe, 0);
        let mut writes: Vec<(u32, u64, u64)> =
            pieces.iter().map(|&(i, w, l)| (self.layout(stripe, i).0 as u32, base + w, l)).collect();
        if covered == dm * chunk {
            self.full_stripe_writes += 1;
            writes.push((parity as u32, base, chunk));
            for (m, off, len) in writes {
                self.issue(now, part, m, Op::Write, off, len, Cause::FullStripeWrite, ctx);
            }
            return;
        }
        // Parity changes exactly where some chunk's data does: the union of the pieces'
        // ranges within the chunk (not one span from the lowest to the highest, which
        // turns two small writes far apart into a read and write of most of a chunk).
        let extents = union_of_ranges(pieces.iter().map(|&(_, w, l)| (w, w + l)));
        writes.extend(extents.iter().map(|&(a, b)| (parity as u32, base + a, b - a)));
        // Reconstruct-write reads, for every data chunk, the parity extents it does not
        // overwrite itself.
        let mut rcw_reads: Vec<(u32, u64, u64)> = Vec::new();
        for i in 0..dm {
            let m = self.layout(stripe, i).0 as u32;
            let own = union_of_ranges(pieces.iter().filter(|p| p.0 == i).map(|&(_, w, l)| (w, w + l)));
            for (a, b) in subtract_ranges(&extents, &own) {
                rcw_reads.push((m, base + a, b - a));
            }
        }
        let rmw_ios = 2 * writes.len();
        let rcw_ios = rcw_reads.len() + writes.len();
        let (reads, read_cause, write_cause) = if rmw_ios <= rcw_ios {
            self.rmw_writes += 1;
            (writes.clone(), Cause::RmwRead, Cause::RmwWrite)
        } else {
            self.rcw_writes += 1;
            (rcw_reads, Cause::RcwRead, Cause::RcwWrite)
        };
        self.parts[part as usize].writes = writes;
        self.parts[part as usize].writes_cause = write_cause;
        for (m, off, len) in reads {
            self.issue(now, part, m, Op::Read, off, len, read_cause, ctx);
        }
    }

    /// Controller write-back cache: absorb the write, destage a stripe as soon as it is
    /// wholly dirty (a full-stripe write, no reads), and evict the oldest stripes when the
    /// cache is over capacity; the write that triggers a destage waits for it.
    fn cached_write(&mut self, now: Ns, parent: u32, req: &Request, ctx: &mut dyn Ctx) {
        let unit = 4096u64;
        let stripe_units = self.data_members() * self.chunk / unit;
        let words = stripe_units.div_ceil(64) as usize;
        let pa = &mut self.parents[parent as usize];
        pa.min_done = pa.min_done.max(now) + self.cache_latency_ns;
        let first = req.offset() / unit;
        let last = (req.offset() + req.bytes).div_ceil(unit);
        for u in first..last {
            let (stripe, bit) = (u / stripe_units, u % stripe_units);
            let entry = self.dirty.entry(stripe).or_insert_with(|| DirtyStripe { bits: vec![0; words], units: 0 });
            if entry.units == 0 {
                self.dirty_order.push_back(stripe);
            }
            let w = &mut entry.bits[(bit / 64) as usize];
            if *w & (1 << (bit % 64)) == 0 {
                *w |= 1 << (bit % 64);
                entry.units += 1;
                self.dirty_units += 1;
            }
            if entry.units == stripe_units {
                // The write that completes a stripe waits for its full-stripe write, so a
                // stream is held to the members' speed rather than absorbed for free.
                self.destage(now, parent, stripe, ctx);
            }
        }
        while self.dirty_units * unit > self.cache_bytes {
            let Some(stripe) = self.dirty_order.pop_front() else { break };
            self.destage(now, parent, stripe, ctx);
        }
    }

    /// Write one dirty stripe to the members: each run of contiguous dirty units is its own
    /// piece.
    fn destage(&mut self, now: Ns, parent: u32, stripe: u64, ctx: &mut dyn Ctx) {
        let Some(d) = self.dirty.remove(&stripe) else { return };
        if d.units == 0 {
            return;
        }
        self.dirty_units -= d.units;
        self.destages += 1;
        self.dirty_order.retain(|&s| s != stripe);
        let unit = 4096u64;
        let per_chunk = self.chunk / unit;
        let dirty = |u: u64| d.bits[(u / 64) as usize] & (1 << (u % 64)) != 0;
        let mut pieces = Vec::new();
        for idx in 0..self.data_members() {
            let (first, end) = (idx * per_chunk, (idx + 1) * per_chunk);
            let mut u = first;
            while u < end {
                if !dirty(u) {
                    u += 1;
                    continue;
                }
                let start = u;
                while u < end && dirty(u) {
                    u += 1;
                }
                pieces.push((idx, (start - first) * unit, (u - start) * unit));
            }
        }
        let part = self.new_part(parent);
        self.write_stripe(now, part, stripe, &pieces, ctx);
    }

    /// Split [offset, offset+bytes) into per-stripe lists of (data index, offset in chunk, length).
    fn split(&self, offset: u64, bytes: u64) -> Vec<(u64, Vec<Piece>)> {
        let dm = self.data_members();
        let mut out: Vec<(u64, Vec<Piece>)> = Vec::new();
        let mut pos = offset;
        let end = offset + bytes;
        while pos < end {
            let chunk_no = pos / self.chunk;
            let within = pos % self.chunk;
            let len = (self.chunk - within).min(end - pos);
            let (stripe, idx) = (chunk_no / dm, chunk_no % dm);
            match out.last_mut() {
                Some((s, v)) if *s == stripe => v.push((idx, within, len)),
                _ => out.push((stripe, vec![(idx, within, len)])),
            }
            pos += len;
        }
        out
    }
}

/// Sorted, disjoint union of half-open ranges (touching ranges merge).
fn union_of_ranges(ranges: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = ranges.collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// `from` minus `cut`, both sorted and disjoint.
fn subtract_ranges(from: &[(u64, u64)], cut: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for &(a, b) in from {
        let mut pos = a;
        for &(c, d) in cut {
            if d <= pos || c >= b {
                continue;
            }
            if c > pos {
                out.push((pos, c));
            }
            pos = pos.max(d);
        }
        if pos < b {
            out.push((pos, b));
        }
    }
    out
}

impl DeviceModel for Raid {
    fn capacity_bytes(&self) -> u64 {
        self.member_capacity * self.data_members()
    }

    fn submit(&mut self, now: Ns, tag: u64, req: &Request, ctx: &mut dyn Ctx) {
        let parent = self.new_parent(tag);
        // Hold the parent open while issuing, so an immediate member completion cannot close it.
        let guard = self.new_part(parent);
        let chunk = self.chunk;
        match req.op {
            Op::Flush => {
                // Destage everything the controller holds, then flush the members.
                while let Some(stripe) = self.dirty_order.pop_front() {
                    self.destage(now, parent, stripe, ctx);
                }
                let part = self.new_part(parent);
                for m in 0..self.members.len() as u32 {
                    self.issue(now, part, m, Op::Flush, 0, 0, Cause::Flush, ctx);
                }
            }
            Op::Read | Op::Trim => {
                if req.op == Op::Read {
                    self.host_read_bytes += req.bytes;
                    self.parents[parent as usize].read_bytes = req.bytes;
                }
                let cause = if req.op == Op::Read { Cause::DataRead } else { Cause::Trim };
                for (stripe, pieces) in self.split(req.offset(), req.bytes) {
                    let part = self.new_part(parent);
                    for (idx, within, len) in pieces {
                        let (m, _) = self.layout(stripe, idx);
                        self.issue(now, part, m as u32, req.op, stripe * chunk + within, len, cause, ctx);
                    }
                }
            }
            Op::Write => {
                self.host_write_bytes += req.bytes;
                // The data crosses the link before the write completes (a cached one is
                // acknowledged after it, members stream it on as it arrives).
                self.parents[parent as usize].min_done = self.link_transfer(now, req.bytes);
                if self.cache_bytes > 0 && !req.fua {
                    self.cached_write(now, parent, req, ctx);
                } else {
                    for (stripe, pieces) in self.split(req.offset(), req.bytes) {
                        let part = self.new_part(parent);
                        self.write_stripe(now, part, stripe, &pieces, ctx);
                    }
                }
            }
        }
        // Release the guard: completes the parent now if every part already finished.
        self.part_done(now, guard, ctx);
    }

    fn wake(&mut self, now: Ns, token: u64, ctx: &mut dyn Ctx) {
        let n = self.members.len() as u64;
        if token & 1 == 1 {
            let inner = token >> 1;
            let (member, mtoken) = (inner % n, inner / n);
            let mut mctx = MemberCtx { outer: ctx, member, members: n };
            self.members[member as usize].wake(now, mtoken, &mut mctx);
            return;
        }
        let sub = (token >> 1) as u32;
        let part = self.subs[sub as usize];
        let (issued, cause) = self.sub_meta[sub as usize];
        self.cause_ns[cause as usize] += now - issued;
        self.free_subs.push(sub);
        let p = &mut self.parts[part as usize];
        p.outstanding -= 1;
        if p.outstanding == 0 {
            self.part_done(now, part, ctx);
        }
    }

    fn precondition(&mut self) {
        for m in &mut self.members {
            m.precondition();
        }
    }

    /// The members' settings (the first member's: all are built alike), the array's host
    /// link in place of a member's (`link_mb_per_s`: stated, or the members' together) and
    /// its controller's write-back cache (`controller_cache_bytes`, 0 for none).
    fn facts(&self) -> crate::models::Facts {
        let mut f: crate::models::Facts =
            self.members[0].facts().into_iter().filter(|(k, _)| !k.starts_with("write_amplification")).collect();
        f.insert("link_mb_per_s", self.link_mb_per_s);
        // Every RAID prediction rests on it (0: none, every write goes to the members, as md).
        f.insert("controller_cache_bytes", self.cache_bytes as f64);
        f
    }

    fn error(&self) -> Option<String> {
        self.members.iter().enumerate().find_map(|(i, m)| m.error().map(|e| format!("member {i}: {e}")))
    }

    fn reset_counters(&mut self) {
        for m in &mut self.members {
            m.reset_counters();
        }
        self.host_read_bytes = 0;
        self.host_write_bytes = 0;
        self.member_reads = 0;
        self.member_writes = 0;
        self.member_read_bytes = 0;
        self.member_write_bytes = 0;
        self.full_stripe_writes = 0;
        self.rmw_writes = 0;
        self.rcw_writes = 0;
        self.destages = 0;
        self.cause_ns = [0; CAUSES.len()];
        self.link_ns_total = 0;
    }

    /// Member-I/O time, in ns, by why the array sent the I/O: for each I/O to a member,
    /// the time from its issue to the member's completion (queueing inside the member
    /// included), summed over all member I/Os; the whole is that sum. `data_read`: host
    /// reads; `data_write`: RAID0 writes; `full_stripe_write`: data and parity of a
    /// whole stripe, no reads; `parity_rmw_read` / `parity_rmw_write`: read-modify-write
    /// reading, then writing, old/new data and parity; `reconstruct_read` /
    /// `reconstruct_write`: reconstruct-write reading the untouched data, then writing
    /// new data and parity; `trim`, `flush`: passed on to the members. Writes the
    /// controller cache absorbs count when they are destaged. Plus `host_link`: the
    /// controller's host link moving the host's data (each byte once).
    fn time_by_mechanism(&self) -> Mechanisms {
        let mut m: Mechanisms = CAUSES.iter().zip(self.cause_ns).map(|(&name, ns)| (name, ns)).collect();
        m.insert("host_link", self.link_ns_total);
        m
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::new();
        for m in &self.members {
            for (k, v) in m.counters() {
                if k.starts_with("host_") {
                    continue;
                }
                *c.entry(k).or_insert(0) += v;
            }
        }
        c.insert("host_read_bytes", self.host_read_bytes);
        c.insert("host_write_bytes", self.host_write_bytes);
        c.insert("member_reads", self.member_reads);
        c.insert("member_writes", self.member_writes);
        c.insert("member_read_bytes", self.member_read_bytes);
        c.insert("member_write_bytes", self.member_write_bytes);
        c.insert("full_stripe_writes", self.full_stripe_writes);
        c.insert("read_modify_writes", self.rmw_writes);
        c.insert("reconstruct_writes", self.rcw_writes);
        c.insert("destages", self.destages);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Value;
    use crate::replay::{replay, Mode};

    #[test]
    fn range_union_and_difference() {
        assert_eq!(union_of_ranges([(8, 12), (0, 4), (4, 6), (10, 20)].into_iter()), vec![(0, 6), (8, 20)]);
        assert_eq!(subtract_ranges(&[(0, 6), (8, 20)], &[(2, 3), (5, 10), (18, 30)]), vec![(0, 2), (3, 5), (10, 18)]);
        assert_eq!(subtract_ranges(&[(0, 6)], &[]), vec![(0, 6)]);
        assert_eq!(subtract_ranges(&[(0, 6)], &[(0, 6)]), vec![]);
    }

    fn raid5_with_cache(cache_bytes: f64) -> Raid {
        let p: Params = [
            ("kind", Value::Text("raid".into())),
            ("level", Value::Num(5.0)),
            ("members", Value::Num(4.0)),
            ("chunk_bytes", Value::Num(524288.0)),
            ("cache_bytes", Value::Num(cache_bytes)),
            ("member.kind", Value::Text("ssd".into())),
            ("member.capacity", Value::Num((1u64 << 30) as f64)),
            ("member.over_provisioning", Value::Num(0.25)),
            ("member.precondition", Value::Text("none".into())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Raid::from_params(&p).unwrap()
    }

    #[test]
    fn the_controller_cache_is_a_fact() {
        assert_eq!(raid5_with_cache(0.0).facts()["controller_cache_bytes"], 0.0);
        assert_eq!(raid5_with_cache((8u64 << 20) as f64).facts()["controller_cache_bytes"], (8u64 << 20) as f64);
    }

    #[test]
    fn destage_writes_each_dirty_run_and_only_the_parity_under_it() {
        // Two 4 KiB writes far apart in one chunk, one in another chunk at the same offset
        // as the first, then a flush: runs of 4 KiB, parity at two offsets.
        let mut raid = raid5_with_cache((8u64 << 20) as f64);
        let reqs = [
            Request::new(0, Op::Write, 0, 4096),
            Request::new(0, Op::Write, (256 << 10) / SECTOR_BYTES, 4096),
            Request::new(0, Op::Write, (512 << 10) / SECTOR_BYTES, 4096),
            Request::new(0, Op::Flush, 0, 0),
        ];
        let out = replay(&mut raid, &reqs, Mode::Closed { queue_depth: 1 }).unwrap();
        let c = &out.counters;
        // 3 data runs and 2 parity extents written, each 4 KiB; reconstruct-write (3 reads:
        // chunk 1 at 256 KiB, chunk 2 at both offsets) beats read-modify-write (5 reads).
        assert_eq!((c["member_writes"], c["member_write_bytes"]), (5, 5 * 4096));
        assert_eq!((c["member_reads"], c["member_read_bytes"]), (3, 3 * 4096));
        assert_eq!((c["destages"], c["reconstruct_writes"]), (1, 1));
    }

    #[test]
    fn cached_random_small_writes_are_not_slower_than_uncached() {
        let spec = crate::synthetic::SyntheticSpec {
            rw: "randwrite".into(),
            count: 4000,
            span: 3 << 30,
            ..Default::default()
        };
        let reqs = crate::synthetic::generate(&spec).unwrap();
        let run = |cache: f64| {
            let mut raid = raid5_with_cache(cache);
            replay(&mut raid, &reqs, Mode::Closed { queue_depth: 32 }).unwrap()
        };
        let (plain, cached) = (run(0.0), run((1u64 << 20) as f64));
        let (p, c) = (plain.summary().iops, cached.summary().iops);
        assert!(c >= 0.8 * p, "cached {c:.0} IOPS vs uncached {p:.0}");
        // Member I/Os stay 4 KiB (a few runs of neighbouring units merge).
        let c = &cached.counters;
        assert!(c["member_write_bytes"] < 4200 * c["member_writes"], "{c:?}");
        assert!(c["member_read_bytes"] < 4200 * c["member_reads"], "{c:?}");
    }
}
