//! SSD model: controller, host link, DRAM write buffer, channels x dies x planes with
//! tR/tPROG/tBERS, over a page-mapped FTL (`ftl.rs`) with greedy GC.
//!
//! Every resource keeps the time it is next free, so a request's completion is known
//! when it is submitted; the model never needs a wake-up. Writes are acknowledged once
//! in the buffer; the buffer fills multi-plane program batches, one die at a time,
//! channel first, and a buffer slot frees only when its unit's program ends, which is
//! how flash and GC time push back on the host. Flush and FUA wait for the buffer.
//!
//! Over-provisioning, as simulated (reported in `facts`): physical space is whole blocks
//! per plane, so the asked fraction is rounded up (0.07 -> 0.078 at 4 x 69 blocks); each
//! plane keeps `gc_free_blocks` free blocks and one open block that hold no data, so the
//! spare GC can use is smaller again (0.031 there), and more so the more planes there are.
//! Host data goes to the less loaded of the next two dies in turn, and a plane holding a
//! quarter block more than its die's least loaded one sits a program out, so the planes'
//! shares of valid data stay balanced: each plane is then a greedy pool of its own blocks
//! and its share of the data, and an independent simulator of that pool agrees
//! (tests/test_ftl_reference.py). Left to wander, a plane above its share copies more
//! (greedy write amplification is convex in the spare) or fills up.

use crate::engine::Ctx;
use crate::error::{CoreError, Result};
use crate::models::fastdiv::Divisor;
use crate::models::ftl::{Ftl, GcWork};
use crate::models::{Counters, DeviceModel, Facts, Kind, Mechanism, Mechanisms};
use crate::params::{ParamReader, Params};
use crate::request::{Ns, Op, Request};
use crate::rng::Rng;

/// The SSD model in the kind table (`crate::models::KINDS`).
pub const KIND: Kind = Kind {
    name: "ssd",
    build: |p| Ok(Box::new(Ssd::from_params(p)?)),
    mechanisms: &[
        Mechanism { name: "controller", cause: "controller command processing" },
        Mechanism { name: "host_link", cause: "host-link transfer" },
        Mechanism { name: "channel", cause: "flash-channel transfer" },
        Mechanism { name: "read", cause: "flash page reads" },
        Mechanism { name: "program", cause: "flash programs" },
        Mechanism { name: "gc_copy", cause: "garbage-collection copies" },
        Mechanism { name: "erase", cause: "block erases" },
    ],
    whole: "the summed work time of controller, host link, flash channels and planes",
    offered: true,
};

pub const UNIT_BYTES: u64 = 4096;
/// The bound on `planes_per_die`.
const MAX_PLANES_PER_DIE: usize = 16;
const UNIT_SECTORS: u64 = UNIT_BYTES / crate::request::SECTOR_BYTES;

#[derive(Clone, Debug)]
pub struct SsdConfig {
    pub capacity: u64,
    pub over_provisioning: f64,
    pub channels: u32,
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    pub page_bytes: u64,
    pub pages_per_block: u32,
    pub t_read_ns: Ns,
    pub t_prog_ns: Ns,
    pub t_erase_ns: Ns,
    pub channel_mb_per_s: f64,
    pub link_mb_per_s: f64,
    pub cmd_read_ns: Ns,
    pub cmd_write_ns: Ns,
    pub fixed_latency_ns: Ns,
    pub buffer_bytes: u64,
    pub gc_free_blocks: u32,
    pub precondition: String,
    pub precondition_passes: f64,
    pub seed: u64,
}

impl SsdConfig {
    pub fn from_params(params: &Params) -> Result<Self> {
        let r = ParamReader::new(KIND.name, params);
        let cfg = SsdConfig {
            capacity: r.int("capacity", 16 << 30, 1 << 20, 1 << 44)?,
            over_provisioning: r.num("over_provisioning", 0.07, 0.001, 4.0)?,
            channels: r.int("channels", 8, 1, MAX_CHANNELS as u64)? as u32,
            dies_per_channel: r.int("dies_per_channel", 4, 1, 256)? as u32,
            planes_per_die: r.int("planes_per_die", 2, 1, MAX_PLANES_PER_DIE as u64)? as u32,
            page_bytes: r.int("page_bytes", 8192, 4096, 1 << 20)?,
            pages_per_block: r.int("pages_per_block", 128, 1, 4096)? as u32,
            t_read_ns: r.ns("t_read_ns", 60_000)?,
            t_prog_ns: r.ns("t_prog_ns", 1_000_000)?,
            t_erase_ns: r.ns("t_erase_ns", 3_500_000)?,
            channel_mb_per_s: r.num("channel_mb_per_s", 400.0, 1.0, 1e6)?,
            link_mb_per_s: r.num("link_mb_per_s", 550.0, 1.0, 1e6)?,
            cmd_read_ns: r.ns("cmd_read_ns", 10_000)?,
            cmd_write_ns: r.ns("cmd_write_ns", 11_000)?,
            fixed_latency_ns: r.ns("fixed_latency_ns", 10_000)?,
            buffer_bytes: r.int("buffer_bytes", 32 << 20, 0, 1 << 40)?,
            gc_free_blocks: r.int("gc_free_blocks", 2, 1, 1 << 20)? as u32,
            precondition: r.text("precondition", "sequential", &["none", "sequential", "random"])?,
            precondition_passes: r.num("precondition_passes", 2.0, 0.0, 100.0)?,
            seed: r.int("seed", 1, 0, u64::MAX >> 11)?,
        };
        r.finish()?;
        if !cfg.page_bytes.is_multiple_of(UNIT_BYTES) {
            return Err(CoreError::BadParam { name: "page_bytes".into(), reason: "must be a multiple of 4096".into() });
        }
        if !cfg.capacity.is_multiple_of(UNIT_BYTES) {
            return Err(CoreError::BadParam { name: "capacity".into(), reason: "must be a multiple of 4096 bytes".into() });
        }
        Ok(cfg)
    }
}

pub struct Ssd {
    cfg: SsdConfig,
    pub ftl: Ftl,
    units_per_page: u32,
    /// Divide by `units_per_page` (physical unit -> page, batch index -> plane).
    per_page: Divisor,
    dies: u32,
    /// Channel of each die, so the hot path needs no division (a plane's is in `planes`).
    die_channel: Vec<Channel>,
    /// Units of the current batch when full: a page for each plane in `batch_planes`.
    batch_units: u32,
    /// The planes of `batch_die` the current batch programs, in slot order: the first
    /// `batch_nplanes` (a fixed array: no capacity checks on the hot path).
    batch_planes: [u32; MAX_PLANES_PER_DIE],
    batch_nplanes: u32,
    unit_ch_ns: Ns,
    /// Host link time of one 4 KiB unit (the common request size, computed once).
    link_unit_ns: Ns,
    ctrl_free: Ns,
    link_free: Ns,
    /// When each channel is next free, indexed by a `Channel` (a u8), so indexing needs no
    /// bounds check; the entries past `channels` are unused.
    ch_free: Box<[Ns; MAX_CHANNELS]>,
    /// Each plane's next free time and channel, together so a read looks up one entry.
    planes: Vec<Plane>,
    /// Release time of each write-buffer slot (when its unit's program ends).
    ring: Vec<Ns>,
    ring_head: usize,
    batch_die: u32,
    batch_slots: Vec<u32>,
    batch_ready: Ns,
    /// When everything accepted so far is on flash.
    drained_at: Ns,
    host_read_bytes: u64,
    flash_read_units: u64,
    gc_moved_units: u64,
    // Work accounting (see `time_by_mechanism`): sums in ns, or counts turned into ns there.
    controller_ns: u64,
    link_ns_total: u64,
    /// 4 KiB units moved over a flash channel (host reads and programs).
    channel_units: u64,
    /// Plane programs of host data (a multi-plane program counts each plane it busies).
    program_planes: u64,
    gc_copy_ns: u64,
    erase_ns: u64,
}

/// A channel number (`channels` is at most `MAX_CHANNELS`).
type Channel = u8;
/// The bound on `channels`: every channel number fits a `Channel`.
const MAX_CHANNELS: usize = Channel::MAX as usize + 1;

#[derive(Clone, Copy)]
struct Plane {
    /// When the plane is next free.
    free: Ns,
    channel: Channel,
}

#[inline]
fn transfer_ns(bytes: u64, mb_per_s: f64) -> Ns {
    // MB = 10^6 bytes; bytes / (MB/s * 1e6) s = bytes * 1000 / MB/s ns.
    (bytes as f64 * 1000.0 / mb_per_s).round() as Ns
}

impl Ssd {
    pub fn from_params(params: &Params) -> Result<Self> {
        Ssd::new(SsdConfig::from_params(params)?)
    }

    pub fn new(cfg: SsdConfig) -> Result<Self> {
        // `from_params` bounds it too; a config built by hand must not fold channels onto
        // others through the `Channel` cast.
        if !(1..=MAX_CHANNELS).contains(&(cfg.channels as usize)) {
            return Err(CoreError::BadParam { name: "channels".into(), reason: format!("must be 1 to {MAX_CHANNELS}") });
        }
        let units_per_page = (cfg.page_bytes / UNIT_BYTES) as u32;
        let units_per_block = units_per_page * cfg.pages_per_block;
        let planes = cfg.channels * cfg.dies_per_channel * cfg.planes_per_die;
        let logical_units = cfg.capacity / UNIT_BYTES;
        let physical_units = (logical_units as f64 * (1.0 + cfg.over_provisioning)).ceil() as u64;
        let blocks = physical_units.div_ceil(units_per_block as u64);
        let blocks_per_plane = blocks.div_ceil(planes as u64) as u32;
        let logical_blocks_per_plane = logical_units.div_ceil(units_per_block as u64 * planes as u64);
        let spare = blocks_per_plane as i64 - logical_blocks_per_plane as i64;
        if spare < cfg.gc_free_blocks as i64 + 2 {
            return Err(CoreError::BadParam {
                name: "over_provisioning".into(),
                reason: format!(
                    "leaves {spare} spare blocks per plane; GC needs at least gc_free_blocks + 2 = {} \
                     (raise capacity or over_provisioning, or use fewer planes)",
                    cfg.gc_free_blocks + 2
                ),
            });
        }
        if (planes as u64) * (blocks_per_plane as u64) * (units_per_block as u64) >= u32::MAX as u64 {
            return Err(CoreError::BadParam { name: "capacity".into(), reason: "too large for 32-bit unit addresses (16 TiB)".into() });
        }
        let batch_units = units_per_page * cfg.planes_per_die;
        let ring_units = (cfg.buffer_bytes / UNIT_BYTES).max(2 * batch_units as u64) as usize;
        let ftl = Ftl::new(planes, blocks_per_plane, units_per_block, logical_units, cfg.gc_free_blocks);
        Ok(Ssd {
            unit_ch_ns: transfer_ns(UNIT_BYTES, cfg.channel_mb_per_s),
            link_unit_ns: transfer_ns(UNIT_BYTES, cfg.link_mb_per_s),
            units_per_page,
            per_page: Divisor::new(units_per_page),
            dies: cfg.channels * cfg.dies_per_channel,
            die_channel: (0..cfg.channels * cfg.dies_per_channel).map(|d| (d % cfg.channels) as Channel).collect(),
            batch_units,
            batch_planes: std::array::from_fn(|p| p as u32),
            batch_nplanes: cfg.planes_per_die,
            ctrl_free: 0,
            link_free: 0,
            ch_free: Box::new([0; MAX_CHANNELS]),
            planes: (0..planes).map(|p| Plane { free: 0, channel: (p / cfg.planes_per_die % cfg.channels) as Channel }).collect(),
            ring: vec![0; ring_units],
            ring_head: 0,
            batch_die: 0,
            batch_slots: Vec::with_capacity(batch_units as usize),
            batch_ready: 0,
            drained_at: 0,
            host_read_bytes: 0,
            flash_read_units: 0,
            gc_moved_units: 0,
            controller_ns: 0,
            link_ns_total: 0,
            channel_units: 0,
            program_planes: 0,
            gc_copy_ns: 0,
            erase_ns: 0,
            ftl,
            cfg,
        })
    }

    /// Host link time of `bytes`, in nanoseconds.
    #[inline]
    fn link_ns(&self, bytes: u64) -> Ns {
        if bytes == UNIT_BYTES {
            self.link_unit_ns
        } else {
            transfer_ns(bytes, self.cfg.link_mb_per_s)
        }
    }

    /// How many pages per block the FTL uses (for comparing WA with its many-pages limit).
    pub fn units_per_block(&self) -> u32 {
        self.ftl.units_per_block
    }

    #[inline]
    fn gc_time(&mut self, plane: u32, at: Ns, work: GcWork) {
        if work.erases == 0 && work.moved_units == 0 {
            return;
        }
        self.gc_moved_units += work.moved_units;
        let pages = work.moved_units.div_ceil(self.units_per_page as u64);
        // Copy-back inside the plane: read and program each page, then erase the victims.
        let (copy, erase) = (pages * (self.cfg.t_read_ns + self.cfg.t_prog_ns), work.erases * self.cfg.t_erase_ns);
        self.gc_copy_ns += copy;
        self.erase_ns += erase;
        let busy = copy + erase;
        let p = &mut self.planes[plane as usize].free;
        *p = (*p).max(at) + busy;
    }

    /// The die that takes the next batch of host data: the less loaded (valid data of its
    /// fullest plane) of the next two in turn, which keeps the planes' shares balanced.
    #[inline]
    fn next_die(&self, die: u32) -> u32 {
        let next = |d: u32| if d + 1 == self.dies { 0 } else { d + 1 };
        let ppd = self.cfg.planes_per_die;
        let (a, b) = (next(die), next(next(die)));
        if self.ftl.load(b * ppd, ppd) < self.ftl.load(a * ppd, ppd) {
            b
        } else {
            a
        }
    }

    /// Program the current (possibly partial) batch on its die.
    fn program_batch(&mut self) {
        if self.batch_slots.is_empty() {
            return;
        }
        let die = self.batch_die;
        let ch = self.die_channel[die as usize] as usize;
        let units = self.batch_slots.len() as u32;
        let xfer = self.unit_ch_ns * units as u64;
        self.channel_units += units as u64;
        let xs = self.batch_ready.max(self.ch_free[ch]);
        let xe = xs + xfer;
        self.ch_free[ch] = xe;
        // The planes that received a page (all of the batch's when it is full).
        let used = if units == self.batch_units { self.batch_nplanes } else { self.per_page.div(units + self.units_per_page - 1) };
        self.program_planes += used as u64;
        let planes = &self.batch_planes[..used as usize];
        let start = planes.iter().fold(xe, |m, &p| m.max(self.planes[p as usize].free));
        let end = start + self.cfg.t_prog_ns;
        for &p in planes {
            self.planes[p as usize].free = end;
        }
        for &slot in &self.batch_slots {
            self.ring[slot as usize] = end;
        }
        self.batch_slots.clear();
        self.drained_at = self.drained_at.max(end);
        self.batch_die = self.next_die(self.batch_die);
        self.open_batch();
        self.batch_ready = 0;
    }

    /// The planes of `batch_die` the next batch programs: every one, except a plane that
    /// holds more valid data than the die's least loaded plane by over a quarter block
    /// (it sits this program out, so the die's planes stay balanced too).
    fn open_batch(&mut self) {
        let ppd = self.cfg.planes_per_die;
        let first = self.batch_die * ppd;
        let (least, most) = self.ftl.load_range(first, ppd);
        let cap = least + (self.ftl.units_per_block / 4) as u64;
        let mut n = 0;
        for p in first..first + ppd {
            if most <= cap || self.ftl.load(p, 1) <= cap {
                self.batch_planes[n] = p;
                n += 1;
            }
        }
        self.batch_nplanes = n as u32;
        self.batch_units = self.units_per_page * n as u32;
    }

    #[inline(never)]
    fn write(&mut self, now: Ns, req: &Request) -> Ns {
        let t_cmd = now.max(self.ctrl_free) + self.cfg.cmd_write_ns;
        self.ctrl_free = t_cmd;
        self.controller_ns += self.cfg.cmd_write_ns;
        let ls = t_cmd.max(self.link_free);
        let link = self.link_ns(req.bytes);
        self.link_ns_total += link;
        let le = ls + link;
        self.link_free = le;
        let mut done = le;
        // The common request, one aligned 4 KiB unit, skips the unit arithmetic.
        if req.bytes == UNIT_BYTES && req.sector.is_multiple_of(UNIT_SECTORS) {
            done = done.max(self.write_unit(le, req.sector / UNIT_SECTORS));
        } else {
            let (first, last) = unit_range(req);
            for lpn in first..last {
                done = done.max(self.write_unit(le, lpn));
            }
        }
        if req.fua {
            self.batch_ready = self.batch_ready.max(done);
            self.program_batch();
            done = done.max(self.drained_at);
        }
        done + self.cfg.fixed_latency_ns
    }

    /// Unit `lpn` of a write whose data has crossed the host link at `le`: into the next
    /// buffer slot once it is free (returned: when the unit is accepted), and onto flash
    /// with the batch it fills.
    #[inline(always)]
    fn write_unit(&mut self, le: Ns, lpn: u64) -> Ns {
        let slot = self.ring_head;
        let accept = le.max(self.ring[slot]);
        self.ring_head = if slot + 1 == self.ring.len() { 0 } else { slot + 1 };
        let idx = self.batch_slots.len() as u32;
        let plane = self.batch_planes[self.per_page.div(idx) as usize];
        let work = self.ftl.write(lpn, plane);
        self.gc_time(plane, accept, work);
        self.batch_slots.push(slot as u32);
        self.batch_ready = self.batch_ready.max(accept);
        if idx + 1 == self.batch_units {
            self.program_batch();
        }
        accept
    }

    #[inline(always)]
    fn read(&mut self, now: Ns, req: &Request) -> Ns {
        let t_cmd = now.max(self.ctrl_free) + self.cfg.cmd_read_ns;
        self.ctrl_free = t_cmd;
        self.controller_ns += self.cfg.cmd_read_ns;
        self.host_read_bytes += req.bytes;
        // The common request, one aligned 4 KiB unit, skips the unit arithmetic.
        if req.bytes == UNIT_BYTES && req.sector.is_multiple_of(UNIT_SECTORS) {
            return self.read_unit(t_cmd, req.sector / UNIT_SECTORS, UNIT_BYTES);
        }
        self.read_units(t_cmd, req)
    }

    /// `read` of any other request, from its command's end at `t_cmd`.
    #[inline(never)]
    fn read_units(&mut self, t_cmd: Ns, req: &Request) -> Ns {
        let (first, last) = unit_range(req);
        if last == first + 1 {
            return self.read_unit(t_cmd, first, req.bytes);
        }
        let mut units_moved = 0u64;
        let upp = self.units_per_page;
        let mut earliest = Ns::MAX;
        let mut done = t_cmd;
        let mut last_page = u32::MAX;
        let mut page_ready = t_cmd;
        for lpn in first..last {
            let Some(phys) = self.ftl.lookup(lpn) else {
                // Never written or trimmed: the controller returns zeros without flash.
                earliest = earliest.min(t_cmd);
                continue;
            };
            let plane = self.ftl.plane_of_phys(phys);
            let Plane { free, channel } = self.planes[plane as usize];
            let ch = channel as usize;
            let page = self.per_page.div(phys);
            if page != last_page {
                let s = t_cmd.max(free);
                page_ready = s + self.cfg.t_read_ns;
                last_page = page;
                self.flash_read_units += upp as u64;
            }
            let xs = page_ready.max(self.ch_free[ch]);
            let xe = xs + self.unit_ch_ns;
            units_moved += 1;
            self.ch_free[ch] = xe;
            // The plane's register holds the page until its data has left on the channel.
            self.planes[plane as usize].free = xe;
            earliest = earliest.min(xe);
            done = done.max(xe);
        }
        let ls = earliest.max(self.link_free);
        let link = self.link_ns(req.bytes);
        let le = (ls + link).max(done + self.link_unit_ns);
        self.channel_units += units_moved;
        self.link_ns_total += link;
        self.link_free = le;
        le + self.cfg.fixed_latency_ns
    }

    /// `read` of a request inside one 4 KiB unit (the common case), the same steps as
    /// its loop without the loop's bookkeeping: the same result, fewer instructions.
    #[inline(always)]
    fn read_unit(&mut self, t_cmd: Ns, lpn: u64, bytes: u64) -> Ns {
        let xe = match self.ftl.lookup(lpn) {
            // Never written or trimmed: zeros from the controller, no flash.
            None => t_cmd,
            Some(phys) => {
                let plane = &mut self.planes[self.ftl.plane_of_phys(phys) as usize];
                let ch = plane.channel as usize;
                let page_ready = t_cmd.max(plane.free) + self.cfg.t_read_ns;
                self.flash_read_units += self.units_per_page as u64;
                let xe = page_ready.max(self.ch_free[ch]) + self.unit_ch_ns;
                self.ch_free[ch] = xe;
                plane.free = xe;
                self.channel_units += 1;
                xe
            }
        };
        // The unit's data is both the first and the last to leave the flash (for a whole
        // unit the second bound is never above the first).
        let link = self.link_ns(bytes);
        let le = if bytes == UNIT_BYTES {
            xe.max(self.link_free) + link
        } else {
            (xe.max(self.link_free) + link).max(xe + self.link_unit_ns)
        };
        self.link_ns_total += link;
        self.link_free = le;
        le + self.cfg.fixed_latency_ns
    }

    #[inline(never)]
    fn trim(&mut self, now: Ns, req: &Request) -> Ns {
        let t_cmd = now.max(self.ctrl_free) + self.cfg.cmd_write_ns;
        self.ctrl_free = t_cmd;
        self.controller_ns += self.cfg.cmd_write_ns;
        // Only whole units inside the range are unmapped.
        let first = req.offset().div_ceil(UNIT_BYTES);
        let last = ((req.offset() + req.bytes) / UNIT_BYTES).min(self.ftl.logical_units);
        for lpn in first..last {
            self.ftl.trim(lpn);
        }
        t_cmd + self.cfg.fixed_latency_ns
    }

    #[inline(never)]
    fn flush(&mut self, now: Ns) -> Ns {
        let t_cmd = now.max(self.ctrl_free) + self.cfg.cmd_write_ns;
        self.ctrl_free = t_cmd;
        self.controller_ns += self.cfg.cmd_write_ns;
        self.batch_ready = self.batch_ready.max(t_cmd);
        self.program_batch();
        t_cmd.max(self.drained_at) + self.cfg.fixed_latency_ns
    }
}

#[inline]
fn unit_range(req: &Request) -> (u64, u64) {
    let off = req.offset();
    (off / UNIT_BYTES, (off + req.bytes.max(1)).div_ceil(UNIT_BYTES))
}

impl DeviceModel for Ssd {
    fn capacity_bytes(&self) -> u64 {
        self.cfg.capacity
    }

    #[inline]
    fn submit(&mut self, now: Ns, tag: u64, req: &Request, ctx: &mut dyn Ctx) {
        let done = self.service(now, req);
        ctx.complete(tag, done);
    }

    /// Every resource keeps the time it is next free, so the completion is known now.
    fn completes_on_submit(&self) -> bool {
        true
    }

    #[inline]
    fn service(&mut self, now: Ns, req: &Request) -> Ns {
        match req.op {
            Op::Write => self.write(now, req),
            Op::Read => self.read(now, req),
            Op::Trim => self.trim(now, req),
            Op::Flush => self.flush(now),
        }
    }

    #[inline]
    fn prefetch(&self, req: &Request) {
        // From the sector, not the byte offset: the request is not checked yet, and a
        // sector near 2^55 would overflow the multiplication.
        self.ftl.prefetch(req.sector / UNIT_SECTORS);
    }

    #[inline]
    fn prefetch_near(&self, req: &Request) {
        // Only a write touches the old unit's reverse map entry and its block.
        if req.op == Op::Write {
            self.ftl.prefetch_mapped(req.sector / UNIT_SECTORS);
        }
    }

    fn precondition(&mut self) {
        match self.cfg.precondition.as_str() {
            "sequential" => self.ftl.fill_sequential(),
            "random" => {
                self.ftl.fill_sequential();
                let mut rng = Rng::new(self.cfg.seed ^ 0x5eed_f71a);
                self.ftl.overwrite_random(self.cfg.precondition_passes, &mut rng);
            }
            _ => {}
        }
    }

    fn reset_counters(&mut self) {
        self.ftl.reset_counters();
        self.host_read_bytes = 0;
        self.flash_read_units = 0;
        self.gc_moved_units = 0;
        self.controller_ns = 0;
        self.link_ns_total = 0;
        self.channel_units = 0;
        self.program_planes = 0;
        self.gc_copy_ns = 0;
        self.erase_ns = 0;
    }

    /// The drive's work time, in ns, by mechanism: the sum over its resources of the time
    /// each spent working (not waiting), so parallel resources add up and the whole can
    /// exceed elapsed time. `controller`: command processing; `host_link`: the host
    /// interface moving data; `channel`: flash channels moving 4 KiB units of host reads
    /// and programs; `read`: flash page reads (tR) for the host, one plane each;
    /// `program`: host-data programs (tPROG) on every plane of a die (multi-plane);
    /// `gc_copy`: garbage collection copying valid pages inside a plane (tR + tPROG per
    /// page); `erase`: block erases (tBERS) that garbage collection frees blocks with.
    fn time_by_mechanism(&self) -> Mechanisms {
        let pages_read = self.flash_read_units / self.units_per_page as u64;
        Mechanisms::from([
            ("controller", self.controller_ns),
            ("host_link", self.link_ns_total),
            ("channel", self.channel_units * self.unit_ch_ns),
            ("read", pages_read * self.cfg.t_read_ns),
            ("program", self.program_planes * self.cfg.t_prog_ns),
            ("gc_copy", self.gc_copy_ns),
            ("erase", self.erase_ns),
        ])
    }

    /// The rate limits (host link, channels, programs) and write buffer simulated;
    /// over-provisioning as asked, as simulated (physical blocks are whole blocks per
    /// plane, so 0.07 may become 0.078) and as usable by data (each plane keeps
    /// `gc_free_blocks` free and one block open); the steady-state write amplification
    /// (second half of the host writes, after the warm-up that follows preconditioning).
    fn facts(&self) -> Facts {
        let f = &self.ftl;
        let logical = f.logical_units as f64;
        let upb = f.units_per_block as u64;
        let physical = (f.planes as u64 * f.blocks_per_plane as u64 * upb) as f64;
        let reserved = (f.planes as u64 * (f.gc_free_blocks as u64 + 1) * upb) as f64;
        let mut out = Facts::new();
        out.insert("over_provisioning_requested", self.cfg.over_provisioning);
        out.insert("over_provisioning_simulated", physical / logical - 1.0);
        out.insert("over_provisioning_usable", (physical - reserved) / logical - 1.0);
        // The rate limits no pattern may beat: the host link, the flash channels together,
        // and every plane programming a page at once (GC only lowers it); the write buffer
        // that lets a burst run ahead of the flash.
        let c = &self.cfg;
        out.insert("link_mb_per_s", c.link_mb_per_s);
        out.insert("channels_mb_per_s", c.channels as f64 * c.channel_mb_per_s);
        let planes = (c.channels * c.dies_per_channel * c.planes_per_die) as f64;
        out.insert("program_mb_per_s_max", planes * c.page_bytes as f64 * 1e3 / c.t_prog_ns.max(1) as f64);
        out.insert("buffer_bytes", (self.ring.len() as u64 * UNIT_BYTES) as f64);
        if let Some((wa, host_units)) = f.steady_write_amplification() {
            out.insert("write_amplification_steady", wa);
            out.insert("steady_window_host_bytes", (host_units * UNIT_BYTES) as f64);
        }
        out
    }

    fn error(&self) -> Option<String> {
        self.ftl.exhausted.map(|plane| {
            format!(
                "FTL plane {plane} ran out of free blocks: too little over-provisioning per plane for this \
                 write pattern (raise over_provisioning or capacity, or use fewer planes)"
            )
        })
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::new();
        c.insert("host_write_bytes", self.ftl.host_units * UNIT_BYTES);
        c.insert("media_write_bytes", self.ftl.programmed_units * UNIT_BYTES);
        c.insert("host_read_bytes", self.host_read_bytes);
        c.insert("media_read_bytes", self.flash_read_units * UNIT_BYTES);
        c.insert("gc_runs", self.ftl.gc_runs);
        c.insert("erases", self.ftl.erases);
        c.insert("gc_moved_bytes", self.gc_moved_units * UNIT_BYTES);
        c.insert("trimmed_bytes", self.ftl.trimmed_units * UNIT_BYTES);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Value;

    fn config(channels: u32) -> SsdConfig {
        let mut p = Params::new();
        p.insert("capacity".into(), Value::Num((1u64 << 30) as f64));
        p.insert("over_provisioning".into(), Value::Num(0.25));
        p.insert("dies_per_channel".into(), Value::Num(1.0));
        p.insert("planes_per_die".into(), Value::Num(2.0));
        p.insert("pages_per_block".into(), Value::Num(16.0));
        let mut cfg = SsdConfig::from_params(&p).unwrap();
        cfg.channels = channels;
        cfg
    }

    #[test]
    fn every_one_of_256_channels_keeps_its_own_number() {
        let ssd = Ssd::new(config(256)).unwrap();
        // Plane p of die d sits on channel d % 256: the last die's planes on channel 255.
        let channels: Vec<usize> = ssd.planes.iter().map(|p| p.channel as usize).collect();
        assert_eq!(channels, (0..512).map(|p| p / 2 % 256).collect::<Vec<_>>());
        assert_eq!(ssd.die_channel.iter().map(|&c| c as usize).max(), Some(255));
    }

    #[test]
    fn a_config_with_more_channels_than_a_channel_number_holds_is_refused() {
        for channels in [0, 257] {
            let Err(CoreError::BadParam { name, .. }) = Ssd::new(config(channels)) else { panic!("{channels} channels built") };
            assert_eq!(name, "channels");
        }
    }
}
