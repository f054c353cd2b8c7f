//! Live reading of `per_cpu/cpuN/trace_pipe_raw`: one thread per CPU copies sub-buffers
//! out of the ring buffer and decodes them into the compact columns.
//!
//! What the workload pays for a reader is the CPU it takes while the workload runs, so
//! the reader does as little as it can then: it sleeps in `poll` until the kernel says
//! the buffer is `buffer_percent` full (no wake-up per event, one drain per batch),
//! drains it with one read per sub-buffer, and keeps the raw bytes; decoding waits
//! until tracing is off, unless the held bytes reach `hold_bytes` (a long run), when
//! the backlog is decoded on the spot. The files are opened non-blocking: a blocking
//! read never returns once tracing is off and the buffer is empty. After `stop` every
//! thread drains until the kernel says EAGAIN.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::format::BlockLayout;
use super::page::{parse_page, PageHeader, Records};

const O_NONBLOCK: i32 = 0o4000;
/// Nice value of the reader threads (19 = lowest priority).
const READER_NICE: i32 = 19;
/// Raw bytes are held in blocks of this size (no reallocation copies of a big buffer).
const BLOCK_BYTES: usize = 4 << 20;
/// Pause after a drain (matters only where poll ignores buffer_percent).
const SHORT_NAP: Duration = Duration::from_millis(5);

/// Totals of one CPU's reader.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReaderStats {
    pub pages: u64,
    pub bytes: u64,
    pub events: u64,
    pub skipped: u64,
    /// events of another device than those asked for, left out by the reader.
    pub foreign: u64,
    pub pages_with_missed: u64,
    pub missed_stored: u64,
    /// CPU time of the reader threads while tracing was on (what the workload paid).
    pub cpu_ns_during: u64,
    /// CPU time after tracing stopped (final drain and decoding: paid after the run).
    pub cpu_ns_after: u64,
    /// Times a reader woke up and drained its buffer while tracing was on.
    pub drains_during: u64,
    /// Backlogs decoded while tracing was on (held bytes reached the cap).
    pub decodes_during: u64,
}

impl ReaderStats {
    fn add(&mut self, o: &ReaderStats) {
        self.pages += o.pages;
        self.bytes += o.bytes;
        self.events += o.events;
        self.skipped += o.skipped;
        self.foreign += o.foreign;
        self.pages_with_missed += o.pages_with_missed;
        self.missed_stored += o.missed_stored;
        self.cpu_ns_during += o.cpu_ns_during;
        self.cpu_ns_after += o.cpu_ns_after;
        self.drains_during += o.drains_during;
        self.decodes_during += o.decodes_during;
    }
}

/// How the readers wait and how much they hold before decoding.
#[derive(Debug, Clone, Copy)]
pub struct ReaderPlan {
    /// Bytes one read returns at most (the ring buffer's sub-buffer size).
    pub page_size: usize,
    /// Longest sleep in `poll` before looking at the stop flag again.
    pub nap: Duration,
    /// Raw bytes a CPU's reader holds before decoding them during the run.
    pub hold_bytes: usize,
    /// false: leave everything in the kernel's buffer until stop (a run that fits in
    /// it costs no reader CPU at all; a longer one loses events, counted).
    pub read_during_run: bool,
}

type ThreadResult = Result<(Records, ReaderStats), String>;

/// Readers of every CPU's raw pipe. Create with `start`, end with `finish` after
/// tracing has been turned off.
pub struct RawCapture {
    stop: Arc<AtomicBool>,
    wake: Arc<Wake>,
    threads: Vec<JoinHandle<ThreadResult>>,
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wait until the kernel reports the buffer readable (with `buffer_percent` set: that
/// full), `wake` is signalled (stop) or `nap` passes.
fn wait_readable(f: &File, wake: i32, nap: Duration, watch_trace: bool) {
    let mut pfd = [
        libc::pollfd { fd: wake, events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 },
    ];
    let n = if watch_trace { 2 } else { 1 };
    // SAFETY: two pollfds that live across the call.
    unsafe { libc::poll(pfd.as_mut_ptr(), n, nap.as_millis().min(i32::MAX as u128) as libc::c_int) };
}

/// An eventfd that wakes every reader at stop (never read, so it stays readable).
struct Wake(i32);

impl Wake {
    fn new() -> Result<Wake, String> {
        // SAFETY: eventfd returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(format!("eventfd: {}", std::io::Error::last_os_error()));
        }
        Ok(Wake(fd))
    }

    fn signal(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte write to our own eventfd.
        unsafe { libc::write(self.0, one.as_ptr() as *const libc::c_void, 8) };
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

/// Raw sub-buffers as read, decoded in one go later.
struct Held {
    blocks: Vec<Vec<u8>>,
    lens: Vec<u32>,
    bytes: usize,
}

impl Held {
    fn new() -> Held {
        Held { blocks: Vec::new(), lens: Vec::new(), bytes: 0 }
    }

    /// A zeroed slot of `n` bytes at the end of the last block (a new block if full).
    fn slot(&mut self, n: usize) -> &mut [u8] {
        let need_block = self.blocks.last().is_none_or(|b| b.capacity() - b.len() < n);
        if need_block {
            self.blocks.push(Vec::with_capacity(BLOCK_BYTES.max(n)));
        }
        let b = self.blocks.last_mut().unwrap();
        let start = b.len();
        b.resize(start + n, 0);
        &mut b[start..]
    }

    /// Keep the first `n` bytes of the last slot of size `slot`.
    fn keep(&mut self, slot: usize, n: usize) {
        let b = self.blocks.last_mut().unwrap();
        b.truncate(b.len() - slot + n);
        self.lens.push(n as u32);
        self.bytes += n;
    }

    fn drop_slot(&mut self, slot: usize) {
        let b = self.blocks.last_mut().unwrap();
        b.truncate(b.len() - slot);
    }

    fn decode(&mut self, header: &PageHeader, layouts: &[BlockLayout], out: &mut Records, st: &mut ReaderStats) {
        let mut lens = self.lens.iter();
        for b in &self.blocks {
            let mut pos = 0;
            while pos < b.len() {
                let n = *lens.next().expect("a length per held page") as usize;
                let info = parse_page(&b[pos..pos + n], header, layouts, out);
                st.pages += 1;
                st.bytes += n as u64;
                st.events += info.events;
                st.skipped += info.skipped;
                st.foreign += info.foreign;
                st.pages_with_missed += info.missed as u64;
                st.missed_stored += info.missed_count;
                pos += n;
            }
        }
        self.blocks.clear();
        self.lens.clear();
        self.bytes = 0;
    }
}

/// Read until the kernel has nothing more (EAGAIN or 0).
fn drain(f: &mut File, plan: &ReaderPlan, held: &mut Held, mut on_full: impl FnMut(&mut Held)) -> Result<(), String> {
    loop {
        let slot = held.slot(plan.page_size);
        match f.read(slot) {
            Ok(0) => {
                held.drop_slot(plan.page_size);
                return Ok(());
            }
            Ok(n) => {
                held.keep(plan.page_size, n);
                if held.bytes >= plan.hold_bytes {
                    on_full(held);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                held.drop_slot(plan.page_size);
                return Ok(());
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => held.drop_slot(plan.page_size),
            Err(e) => return Err(format!("reading trace_pipe_raw: {e}")),
        }
    }
}

fn reader(mut f: File, stop: Arc<AtomicBool>, wake: Arc<Wake>, header: PageHeader, layouts: Vec<BlockLayout>, plan: ReaderPlan) -> ThreadResult {
    // The ring buffer absorbs bursts, so the reader can yield the CPU to the workload
    // it measures; it catches up when the CPU is idle.
    // SAFETY: plain syscalls on the calling thread.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, READER_NICE);
    }
    let mut out = Records::default();
    let mut st = ReaderStats::default();
    let mut held = Held::new();
    let cpu0 = thread_cpu_ns();
    let mut decodes = 0u64;
    while !stop.load(Ordering::Acquire) {
        wait_readable(&f, wake.0, plan.nap, plan.read_during_run);
        if stop.load(Ordering::Acquire) || !plan.read_during_run {
            continue; // the final drain below takes it all
        }
        let pages_before = held.lens.len();
        drain(&mut f, &plan, &mut held, |h| {
            decodes += 1;
            h.decode(&header, &layouts, &mut out, &mut st);
        })?;
        if held.lens.len() != pages_before {
            st.drains_during += 1;
        }
        // Without buffer_percent support poll returns as soon as anything is there: a
        // short nap keeps that from turning into a read per event.
        std::thread::sleep(SHORT_NAP);
    }
    let cpu1 = thread_cpu_ns();
    // Tracing was off before the stop flag was set: this drain sees every event.
    drain(&mut f, &plan, &mut held, |h| h.decode(&header, &layouts, &mut out, &mut st))?;
    held.decode(&header, &layouts, &mut out, &mut st);
    st.decodes_during = decodes;
    st.cpu_ns_during = cpu1 - cpu0;
    st.cpu_ns_after = thread_cpu_ns() - cpu1;
    Ok((out, st))
}

impl RawCapture {
    /// Open every path (fails before any thread starts if one cannot be opened).
    pub fn start(paths: &[String], header: PageHeader, layouts: Vec<BlockLayout>, plan: ReaderPlan) -> Result<RawCapture, String> {
        let mut files = Vec::new();
        for p in paths {
            let f = OpenOptions::new()
                .read(true)
                .custom_flags(O_NONBLOCK)
                .open(p)
                .map_err(|e| format!("cannot open {p}: {e}"))?;
            files.push(f);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let wake = Arc::new(Wake::new()?);
        let threads = files
            .into_iter()
            .map(|f| {
                let stop = stop.clone();
                let wake = wake.clone();
                let layouts = layouts.clone();
                std::thread::spawn(move || reader(f, stop, wake, header, layouts, plan))
            })
            .collect();
        Ok(RawCapture { stop, wake, threads })
    }

    /// Drain and join every reader; records merged in time order.
    pub fn finish(mut self) -> Result<(Records, ReaderStats), String> {
        self.stop.store(true, Ordering::Release);
        self.wake.signal();
        let mut parts = Vec::new();
        let mut total = ReaderStats::default();
        let mut first_err = None;
        for t in std::mem::take(&mut self.threads) {
            match t.join() {
                Ok(Ok((r, s))) => {
                    total.add(&s);
                    parts.push(r);
                }
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => first_err = first_err.or(Some("a trace reader thread panicked".into())),
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        Ok((Records::merge(parts), total))
    }
}

impl Drop for RawCapture {
    fn drop(&mut self) {
        // Dropped without finish (an error on the Python side): let the threads end.
        self.stop.store(true, Ordering::Release);
        self.wake.signal();
    }
}
