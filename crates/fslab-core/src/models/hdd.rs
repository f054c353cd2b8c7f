//! HDD model: zoned recording (outer tracks faster), a seek curve (square root for short
//! seeks, linear for long ones), a spindle whose angle is a function of time, an on-disk
//! cache with read-ahead segments and write-back, and NCQ scheduling by shortest access
//! time first (seek + rotational wait), with an age limit against starvation.
//!
//! The arm is the one busy resource; the model asks the engine to wake it when the arm
//! finishes an operation, then picks the next. Read-ahead runs while the arm is idle
//! after a read and stops when the arm is needed elsewhere. The host link is a second,
//! serial resource: every byte the host reads or writes crosses it once, cache answers
//! included, so no pattern is faster than `link_mb_per_s`.

use std::collections::VecDeque;

use crate::engine::Ctx;
use crate::error::{CoreError, Result};
use crate::models::{Counters, DeviceModel, Kind, Mechanism, Mechanisms};
use crate::params::{ParamReader, Params};
use crate::request::{Ns, Op, Request, SECTOR_BYTES};

/// The HDD model in the kind table (`crate::models::KINDS`).
pub const KIND: Kind = Kind {
    name: "hdd",
    build: |p| Ok(Box::new(Hdd::from_params(p)?)),
    mechanisms: &[
        Mechanism { name: "command", cause: "command overhead" },
        Mechanism { name: "seek", cause: "seeks" },
        Mechanism { name: "rotation", cause: "rotational latency" },
        Mechanism { name: "transfer", cause: "media transfer" },
        Mechanism { name: "cache", cause: "answers from the drive's cache" },
    ],
    whole: "the drive's work time (arm operations and cache answers)",
    offered: true,
};

#[derive(Clone, Debug)]
pub struct HddConfig {
    pub capacity: u64,
    pub rpm: f64,
    pub heads: u32,
    pub zones: u32,
    pub outer_mb_per_s: f64,
    pub inner_mb_per_s: f64,
    pub seek_track_ns: Ns,
    pub seek_average_ns: Ns,
    pub seek_full_ns: Ns,
    pub head_switch_ns: Ns,
    pub cmd_overhead_ns: Ns,
    pub link_mb_per_s: f64,
    pub cache_bytes: u64,
    pub readahead_bytes: u64,
    pub cache_segments: u32,
    pub write_cache: bool,
    pub ncq_depth: u32,
    pub max_wait_ns: Ns,
}

impl HddConfig {
    pub fn from_params(params: &Params) -> Result<Self> {
        let r = ParamReader::new(KIND.name, params);
        let cfg = HddConfig {
            capacity: r.int("capacity", 500_107_862_016, 1 << 20, 1 << 50)?,
            rpm: r.num("rpm", 7200.0, 1000.0, 20000.0)?,
            heads: r.int("heads", 2, 1, 64)? as u32,
            zones: r.int("zones", 16, 1, 1000)? as u32,
            outer_mb_per_s: r.num("outer_mb_per_s", 190.0, 1.0, 1e4)?,
            inner_mb_per_s: r.num("inner_mb_per_s", 95.0, 1.0, 1e4)?,
            seek_track_ns: r.ns("seek_track_ns", 1_000_000)?,
            seek_average_ns: r.ns("seek_average_ns", 9_000_000)?,
            seek_full_ns: r.ns("seek_full_ns", 18_000_000)?,
            head_switch_ns: r.ns("head_switch_ns", 500_000)?,
            cmd_overhead_ns: r.ns("cmd_overhead_ns", 200_000)?,
            link_mb_per_s: r.num("link_mb_per_s", 550.0, 1.0, 1e6)?,
            cache_bytes: r.int("cache_bytes", 32 << 20, 0, 1 << 40)?,
            readahead_bytes: r.int("readahead_bytes", 1 << 20, 0, 1 << 40)?,
            cache_segments: r.int("cache_segments", 16, 1, 4096)? as u32,
            write_cache: r.int("write_cache", 1, 0, 1)? == 1,
            ncq_depth: r.int("ncq_depth", 32, 1, 1024)? as u32,
            max_wait_ns: r.ns("max_wait_ns", 1_000_000_000)?,
        };
        r.finish()?;
        if cfg.inner_mb_per_s > cfg.outer_mb_per_s {
            return Err(CoreError::BadParam { name: "inner_mb_per_s".into(), reason: "must not exceed outer_mb_per_s".into() });
        }
        if !(cfg.seek_track_ns <= cfg.seek_average_ns && cfg.seek_average_ns <= cfg.seek_full_ns) {
            return Err(CoreError::BadParam {
                name: "seek_average_ns".into(),
                reason: "need seek_track_ns <= seek_average_ns <= seek_full_ns".into(),
            });
        }
        Ok(cfg)
    }
}

#[derive(Clone, Copy, Debug)]
struct Zone {
    start_lba: u64,
    end_lba: u64,
    first_cyl: u64,
    spt: u64,
}

#[derive(Clone, Copy, Debug)]
struct Place {
    cyl: u64,
    head: u64,
    /// Angular position of the sector on its track, in revolutions [0, 1).
    angle: f64,
    ns_per_sector: f64,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    tag: u64,
    op: Op,
    lba: u64,
    sectors: u64,
    arrival: Ns,
}

#[derive(Clone, Copy, Debug)]
struct Dirty {
    lba: u64,
    sectors: u64,
}

/// A cached range [start, end). Sector k >= `base` becomes available at
/// t_base + (k - base + 1) * ns_per_sector (read-ahead filling it); below `base` at once.
#[derive(Clone, Copy, Debug)]
struct Segment {
    start: u64,
    end: u64,
    base: u64,
    t_base: Ns,
    ns_per_sector: f64,
}

impl Segment {
    fn ready_at(&self, last_sector: u64) -> Ns {
        if last_sector < self.base {
            0
        } else {
            self.t_base + ((last_sector - self.base + 1) as f64 * self.ns_per_sector).ceil() as Ns
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Work {
    Host(Pending),
    Destage(Dirty),
}

pub struct Hdd {
    cfg: HddConfig,
    zones: Vec<Zone>,
    cylinders: u64,
    rev_ns: f64,
    cur_cyl: u64,
    cur_head: u64,
    busy: bool,
    /// When the host link is next free (it moves one transfer at a time).
    link_free: Ns,
    in_flight: Option<Work>,
    queue: VecDeque<Pending>,
    dirty: VecDeque<Dirty>,
    dirty_sectors: u64,
    flush_waiters: Vec<u64>,
    segments: VecDeque<Segment>,
    /// Index 0 of `segments` is still being filled by read-ahead (arm idle after a read).
    ra_active: bool,
    ra_planned_end: u64,
    /// Read-ahead must run at least this long: cache hits were promised data from it.
    ra_promised: Ns,
    // counters
    host_read_bytes: u64,
    host_write_bytes: u64,
    media_write_bytes: u64,
    media_read_bytes: u64,
    cache_hits: u64,
    /// Host write bytes acknowledged from the write cache (destaged later).
    cache_absorbed_write_bytes: u64,
    seeks: u64,
    /// Work time per mechanism, ns (see `time_by_mechanism`).
    t: HddTime,
}

/// The drive's work time by mechanism, in nanoseconds (see `time_by_mechanism`).
#[derive(Clone, Copy, Debug, Default)]
struct HddTime {
    command: u64,
    seek: u64,
    rotation: u64,
    transfer: u64,
    cache: u64,
}

const TOKEN_ARM: u64 = 0;

impl Hdd {
    pub fn from_params(params: &Params) -> Result<Self> {
        Ok(Hdd::new(HddConfig::from_params(params)?))
    }

    pub fn new(cfg: HddConfig) -> Self {
        let rev_ns = 60e9 / cfg.rpm;
        // Sectors per track fall linearly from the outer to the inner zone; every zone
        // has the same number of cylinders, enough to hold the capacity.
        let spt: Vec<u64> = (0..cfg.zones)
            .map(|z| {
                let f = if cfg.zones == 1 { 0.0 } else { z as f64 / (cfg.zones - 1) as f64 };
                let rate = cfg.outer_mb_per_s + (cfg.inner_mb_per_s - cfg.outer_mb_per_s) * f;
                ((rate * 1e6 * rev_ns / 1e9) / SECTOR_BYTES as f64).round().max(1.0) as u64
            })
            .collect();
        let total_sectors = cfg.capacity / SECTOR_BYTES;
        let per_cyl_all: u64 = spt.iter().sum::<u64>() * cfg.heads as u64;
        let cyl_per_zone = total_sectors.div_ceil(per_cyl_all);
        let mut zones = Vec::new();
        let mut lba = 0;
        for (z, &s) in spt.iter().enumerate() {
            let sectors = cyl_per_zone * cfg.heads as u64 * s;
            zones.push(Zone { start_lba: lba, end_lba: lba + sectors, first_cyl: z as u64 * cyl_per_zone, spt: s });
            lba += sectors;
        }
        Hdd {
            cylinders: cyl_per_zone * cfg.zones as u64,
            zones,
            rev_ns,
            cur_cyl: 0,
            cur_head: 0,
            busy: false,
            link_free: 0,
            in_flight: None,
            queue: VecDeque::new(),
            dirty: VecDeque::new(),
            dirty_sectors: 0,
            flush_waiters: Vec::new(),
            segments: VecDeque::new(),
            ra_active: false,
            ra_planned_end: 0,
            ra_promised: 0,
            host_read_bytes: 0,
            host_write_bytes: 0,
            media_write_bytes: 0,
            media_read_bytes: 0,
            cache_hits: 0,
            cache_absorbed_write_bytes: 0,
            seeks: 0,
            t: HddTime::default(),
            cfg,
        }
    }

    fn locate(&self, lba: u64) -> Place {
        let z = match self.zones.binary_search_by(|z| {
            if lba < z.start_lba {
                std::cmp::Ordering::Greater
            } else if lba >= z.end_lba {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Equal
            }
        }) {
            Ok(i) => self.zones[i],
            Err(_) => *self.zones.last().unwrap(),
        };
        let off = lba.saturating_sub(z.start_lba);
        let track = off / z.spt;
        let heads = self.cfg.heads as u64;
        Place {
            cyl: (z.first_cyl + track / heads).min(self.cylinders - 1),
            head: track % heads,
            angle: (off % z.spt) as f64 / z.spt as f64,
            ns_per_sector: self.rev_ns / z.spt as f64,
        }
    }

    /// Seek time for a move of `d` cylinders: t2t + (avg - t2t) * sqrt((d-1)/(C/3-1)) up to a
    /// third of the stroke, then linear to the full-stroke time.
    pub fn seek_ns(&self, d: u64) -> f64 {
        if d == 0 {
            return 0.0;
        }
        let c = self.cylinders as f64;
        let third = (c / 3.0).max(2.0);
        let (t2t, avg, full) = (self.cfg.seek_track_ns as f64, self.cfg.seek_average_ns as f64, self.cfg.seek_full_ns as f64);
        let d = d as f64;
        if d <= third {
            t2t + (avg - t2t) * ((d - 1.0) / (third - 1.0)).sqrt()
        } else {
            avg + (full - avg) * (d - third) / (c - third).max(1.0)
        }
    }

    /// Start of media transfer for an access to `p`, if positioning begins at `t`.
    fn media_start(&self, t: Ns, p: &Place) -> f64 {
        let (seek, rotation) = self.positioning(t, p);
        t as f64 + seek + rotation
    }

    /// Positioning for an access to `p` from `t`: seek (or head switch) time, then the
    /// rotational wait for the sector to come under the head, both in ns.
    fn positioning(&self, t: Ns, p: &Place) -> (f64, f64) {
        let d = self.cur_cyl.abs_diff(p.cyl);
        let mut seek = self.seek_ns(d);
        if d == 0 && p.head != self.cur_head {
            seek = self.cfg.head_switch_ns as f64;
        }
        let arrive = t as f64 + seek;
        let angle_now = (arrive % self.rev_ns) / self.rev_ns;
        let mut wait = p.angle - angle_now;
        if wait < 0.0 {
            wait += 1.0;
        }
        (seek, wait * self.rev_ns)
    }

    fn link_ns(&self, bytes: u64) -> Ns {
        (bytes as f64 * 1000.0 / self.cfg.link_mb_per_s).round() as Ns
    }

    /// Move `bytes` over the host link once the data is ready at `ready` (and the link is
    /// free): returns when the transfer ends, and its duration.
    fn link_transfer(&mut self, ready: Ns, bytes: u64) -> (Ns, Ns) {
        let link = self.link_ns(bytes);
        let end = ready.max(self.link_free) + link;
        self.link_free = end;
        (end, link)
    }

    /// Stop read-ahead at time `t`: the segment keeps what was read by then (or promised).
    fn stop_readahead(&mut self, t: Ns) -> Ns {
        if !self.ra_active {
            return t;
        }
        let start = t.max(self.ra_promised);
        self.t.transfer += self.readahead_ns(start);
        self.ra_active = false;
        if let Some(seg) = self.segments.front_mut() {
            let elapsed = start.saturating_sub(seg.t_base) as f64;
            let reached = seg.base + (elapsed / seg.ns_per_sector) as u64;
            seg.end = reached.min(self.ra_planned_end).max(seg.base);
        }
        start
    }

    /// Arm time spent reading ahead, if the read-ahead in progress stops at `t`: from the
    /// end of the read it follows to `t` or to the end of its window, whichever is first.
    fn readahead_ns(&self, t: Ns) -> Ns {
        match self.segments.front() {
            Some(seg) if self.ra_active && self.ra_planned_end > seg.base => {
                seg.ready_at(self.ra_planned_end - 1).min(t).saturating_sub(seg.t_base)
            }
            _ => 0,
        }
    }

    fn cache_hit(&mut self, now: Ns, lba: u64, sectors: u64) -> Option<Ns> {
        let end = lba + sectors;
        for (i, seg) in self.segments.iter().enumerate() {
            let seg_end = if i == 0 && self.ra_active { self.ra_planned_end } else { seg.end };
            if seg.start <= lba && end <= seg_end {
                let ready = seg.ready_at(end - 1);
                if i == 0 && self.ra_active {
                    self.ra_promised = self.ra_promised.max(ready);
                    // A sequential reader keeps read-ahead going a window ahead of it.
                    let ra = self.cfg.readahead_bytes / SECTOR_BYTES;
                    self.ra_planned_end = self.ra_planned_end.max(end + ra).min(self.cfg.capacity / SECTOR_BYTES);
                }
                return Some(ready.max(now));
            }
        }
        None
    }

    fn invalidate_cache(&mut self, now: Ns, lba: u64, sectors: u64) {
        let end = lba + sectors;
        let mut i = 0;
        while i < self.segments.len() {
            let s = self.segments[i];
            let s_end = if i == 0 && self.ra_active { self.ra_planned_end } else { s.end };
            if s.start < end && lba < s_end {
                if i == 0 && self.ra_active {
                    // A write over the read-ahead window ends it (what was read counts).
                    self.t.transfer += self.readahead_ns(now.max(self.ra_promised));
                    self.ra_active = false;
                }
                self.segments.remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Choose and start the next arm operation at `now`, if any.
    fn start_next(&mut self, now: Ns, ctx: &mut dyn Ctx) {
        if self.busy || (self.queue.is_empty() && self.dirty.is_empty()) {
            return;
        }
        let t = self.stop_readahead(now);
        let window = self.queue.len().min(self.cfg.ncq_depth as usize);
        // Starvation guard: the oldest queued command goes first once it is too old.
        let mut choice: Option<(usize, bool)> = None;
        if let Some(oldest) = self.queue.front() {
            if t.saturating_sub(oldest.arrival) > self.cfg.max_wait_ns {
                choice = Some((0, true));
            }
        }
        if choice.is_none() {
            let mut best = f64::INFINITY;
            for i in 0..window {
                let q = self.queue[i];
                let ms = self.media_start(t + self.cfg.cmd_overhead_ns, &self.locate(q.lba));
                if ms < best {
                    best = ms;
                    choice = Some((i, true));
                }
            }
            for i in 0..self.dirty.len().min(64) {
                let ms = self.media_start(t, &self.locate(self.dirty[i].lba));
                if ms < best {
                    best = ms;
                    choice = Some((i, false));
                }
            }
        }
        let (i, host) = choice.expect("non-empty queue");
        let (work, lba, sectors, start_t) = if host {
            let q = self.queue.remove(i).unwrap();
            self.t.command += self.cfg.cmd_overhead_ns;
            (Work::Host(q), q.lba, q.sectors, t + self.cfg.cmd_overhead_ns)
        } else {
            let d = self.dirty.remove(i).unwrap();
            (Work::Destage(d), d.lba, d.sectors, t)
        };
        let p = self.locate(lba);
        if p.cyl != self.cur_cyl {
            self.seeks += 1;
        }
        let (seek, rotation) = self.positioning(start_t, &p);
        let ms = start_t as f64 + seek + rotation;
        let mut media_end = (ms + sectors as f64 * p.ns_per_sector).ceil() as Ns;
        // The arm's busy time [t, media_end) split exactly: rounding goes to the transfer.
        let (seek_ns, rotation_ns) = (seek.round() as Ns, rotation.round() as Ns);
        self.t.seek += seek_ns;
        self.t.rotation += rotation_ns;
        self.t.transfer += (media_end - start_t).saturating_sub(seek_ns + rotation_ns);
        if let Work::Host(q) = work {
            if q.op == Op::Write {
                // A write that bypasses the cache streams its data over the link while the
                // arm positions (the link outruns the platters); the write cannot end before
                // its last byte arrived (an arm waiting for it does no work).
                let (link_end, link) = self.link_transfer(start_t, sectors * SECTOR_BYTES);
                self.t.transfer += link;
                media_end = media_end.max(link_end);
            }
        }
        let end_place = self.locate(lba + sectors - 1);
        self.cur_cyl = end_place.cyl;
        self.cur_head = end_place.head;
        let bytes = sectors * SECTOR_BYTES;
        match work {
            Work::Host(q) if q.op == Op::Read => {
                self.media_read_bytes += bytes;
                let (done, link) = self.link_transfer(media_end, bytes);
                self.t.transfer += link;
                ctx.complete(q.tag, done);
            }
            Work::Host(q) => {
                self.media_write_bytes += bytes;
                ctx.complete(q.tag, media_end);
            }
            Work::Destage(_) => self.media_write_bytes += bytes,
        }
        self.busy = true;
        self.in_flight = Some(work);
        // Arm is free at media_end; the engine wakes us then.
        ctx.wake_at(media_end, TOKEN_ARM);
        let _ = p;
    }

    fn finish(&mut self, now: Ns) {
        self.busy = false;
        match self.in_flight.take() {
            Some(Work::Host(q)) if q.op == Op::Read && self.cfg.readahead_bytes > 0 && self.cfg.cache_bytes > 0 => {
                let p = self.locate(q.lba + q.sectors - 1);
                let end = q.lba + q.sectors;
                let ra = self.cfg.readahead_bytes / SECTOR_BYTES;
                self.segments.push_front(Segment { start: q.lba, end, base: end, t_base: now, ns_per_sector: p.ns_per_sector });
                self.ra_active = true;
                self.ra_planned_end = (end + ra).min(self.cfg.capacity / SECTOR_BYTES);
                self.ra_promised = now;
                while self.segments.len() > self.cfg.cache_segments as usize {
                    self.segments.pop_back();
                }
            }
            Some(Work::Destage(d)) => {
                self.dirty_sectors -= d.sectors;
            }
            _ => {}
        }
    }

    fn release_flushes(&mut self, now: Ns, ctx: &mut dyn Ctx) {
        if self.dirty.is_empty() && !matches!(self.in_flight, Some(Work::Destage(_))) {
            for tag in self.flush_waiters.drain(..) {
                ctx.complete(tag, now);
            }
        }
    }
}

impl DeviceModel for Hdd {
    fn capacity_bytes(&self) -> u64 {
        self.cfg.capacity
    }

    fn submit(&mut self, now: Ns, tag: u64, req: &Request, ctx: &mut dyn Ctx) {
        let lba = req.sector;
        let sectors = req.bytes.div_ceil(SECTOR_BYTES).max(1);
        match req.op {
            Op::Read => {
                self.host_read_bytes += req.bytes;
                if let Some(ready) = self.cache_hit(now + self.cfg.cmd_overhead_ns, lba, sectors) {
                    self.cache_hits += 1;
                    let (done, link) = self.link_transfer(ready, req.bytes);
                    self.t.cache += self.cfg.cmd_overhead_ns + link;
                    ctx.complete(tag, done);
                    return;
                }
                self.queue.push_back(Pending { tag, op: Op::Read, lba, sectors, arrival: now });
            }
            Op::Write => {
                self.host_write_bytes += req.bytes;
                self.invalidate_cache(now, lba, sectors);
                let room = self.cfg.cache_bytes / SECTOR_BYTES;
                if self.cfg.write_cache && !req.fua && self.dirty_sectors + sectors <= room {
                    self.dirty_sectors += sectors;
                    match self.dirty.back_mut() {
                        // Sequential writes coalesce into one destage.
                        Some(last) if last.lba + last.sectors == lba => last.sectors += sectors,
                        _ => self.dirty.push_back(Dirty { lba, sectors }),
                    }
                    self.cache_absorbed_write_bytes += req.bytes;
                    // Acknowledged once the data is in the cache, i.e. once it crossed the link.
                    let (done, link) = self.link_transfer(now + self.cfg.cmd_overhead_ns, req.bytes);
                    self.t.cache += self.cfg.cmd_overhead_ns + link;
                    ctx.complete(tag, done);
                } else {
                    self.queue.push_back(Pending { tag, op: Op::Write, lba, sectors, arrival: now });
                }
            }
            Op::Trim => {
                self.t.command += self.cfg.cmd_overhead_ns;
                ctx.complete(tag, now + self.cfg.cmd_overhead_ns)
            }
            Op::Flush => {
                self.t.command += self.cfg.cmd_overhead_ns;
                self.flush_waiters.push(tag);
                self.release_flushes(now + self.cfg.cmd_overhead_ns, ctx);
            }
        }
        self.start_next(now, ctx);
    }

    fn wake(&mut self, now: Ns, _token: u64, ctx: &mut dyn Ctx) {
        self.finish(now);
        if self.ra_active {
            // Queued reads that the fresh read-ahead will cover are served from the cache.
            let mut i = 0;
            while i < self.queue.len() {
                let q = self.queue[i];
                if q.op == Op::Read {
                    if let Some(ready) = self.cache_hit(now, q.lba, q.sectors) {
                        self.cache_hits += 1;
                        self.queue.remove(i);
                        let (done, link) = self.link_transfer(ready, q.sectors * SECTOR_BYTES);
                        self.t.cache += link;
                        ctx.complete(q.tag, done);
                        continue;
                    }
                }
                i += 1;
            }
        }
        self.release_flushes(now, ctx);
        self.start_next(now, ctx);
    }

    fn reset_counters(&mut self) {
        self.host_read_bytes = 0;
        self.host_write_bytes = 0;
        self.media_read_bytes = 0;
        self.media_write_bytes = 0;
        self.cache_hits = 0;
        self.seeks = 0;
        self.cache_absorbed_write_bytes = 0;
        self.t = HddTime::default();
    }

    /// The drive's work time, in ns, by mechanism; the whole is their sum. `command`:
    /// controller overhead of commands that use the arm, and of trims and flushes;
    /// `seek`: arm movement (or head switch); `rotation`: waiting for the sector to
    /// come under the head; `transfer`: reading or writing the platters (read-ahead into
    /// the cache included, up to where it stopped or, if still going, to the last data
    /// promised to a hit), plus the host link of reads from the platters and of writes
    /// that bypass the write cache (their data crosses the link while the arm positions);
    /// `cache`: requests the cache answered without the arm (read hits, write-cache
    /// acknowledgements: their command and link time). Arm time covers every arm
    /// operation, including destages of the write cache after their writes were
    /// acknowledged. Parts overlap in wall-clock time (the cache answers while the arm
    /// works), so the whole is work, not elapsed time.
    fn time_by_mechanism(&self) -> Mechanisms {
        let mut t = self.t;
        t.transfer += self.readahead_ns(self.ra_promised);
        Mechanisms::from([
            ("command", t.command),
            ("seek", t.seek),
            ("rotation", t.rotation),
            ("transfer", t.transfer),
            ("cache", t.cache),
        ])
    }

    /// The cache settings every prediction assumes, the rate limits (host link, fastest
    /// zone of the platters), and how much of the written data the
    /// write cache acknowledged before it reached the platters: near 1, the prediction
    /// measures the cache (a short trace of small random writes can fit entirely), not
    /// the disk.
    fn facts(&self) -> crate::models::Facts {
        let mut f = crate::models::Facts::new();
        f.insert("write_cache", if self.cfg.write_cache { 1.0 } else { 0.0 });
        f.insert("cache_bytes", self.cfg.cache_bytes as f64);
        // The limits no pattern may beat: the host link, and the platters' fastest zone.
        f.insert("link_mb_per_s", self.cfg.link_mb_per_s);
        f.insert("media_mb_per_s_max", self.cfg.outer_mb_per_s);
        if self.host_write_bytes > 0 {
            f.insert("write_cache_absorbed_fraction", self.cache_absorbed_write_bytes as f64 / self.host_write_bytes as f64);
        }
        f
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::new();
        c.insert("host_read_bytes", self.host_read_bytes);
        c.insert("host_write_bytes", self.host_write_bytes);
        c.insert("media_read_bytes", self.media_read_bytes);
        c.insert("media_write_bytes", self.media_write_bytes);
        c.insert("cache_hits", self.cache_hits);
        c.insert("seeks", self.seeks);
        c.insert("cache_absorbed_write_bytes", self.cache_absorbed_write_bytes);
        c
    }
}
