//! Live reading of `per_cpu/cpuN/trace_pipe_raw`: one thread per CPU decodes pages as
//! they arrive and keeps only the compact columns.
//!
//! The files are opened non-blocking: a blocking read never returns once tracing is
//! off and the buffer is empty. A thread sleeps briefly when its buffer is empty (no
//! reader waits in the kernel, so tracing costs the workload no wake-ups), and after
//! `stop` drains until the kernel says EAGAIN.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::format::BlockLayout;
use super::page::{parse_page, PageHeader, Records};

const O_NONBLOCK: i32 = 0o4000;
/// Nice value of the reader threads (19 = lowest priority).
const READER_NICE: i32 = 19;

/// Totals of one CPU's reader.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReaderStats {
    pub pages: u64,
    pub bytes: u64,
    pub events: u64,
    pub skipped: u64,
    pub pages_with_missed: u64,
    pub missed_stored: u64,
}

impl ReaderStats {
    fn add(&mut self, o: &ReaderStats) {
        self.pages += o.pages;
        self.bytes += o.bytes;
        self.events += o.events;
        self.skipped += o.skipped;
        self.pages_with_missed += o.pages_with_missed;
        self.missed_stored += o.missed_stored;
    }
}

type ThreadResult = Result<(Records, ReaderStats), String>;

/// Readers of every CPU's raw pipe. Create with `start`, end with `finish` after
/// tracing has been turned off.
pub struct RawCapture {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<ThreadResult>>,
}

impl RawCapture {
    /// Open every path (fails before any thread starts if one cannot be opened).
    pub fn start(
        paths: &[String],
        header: PageHeader,
        layouts: Vec<BlockLayout>,
        page_size: usize,
        idle_sleep: Duration,
    ) -> Result<RawCapture, String> {
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
        let threads = files
            .into_iter()
            .map(|mut f| {
                let stop = stop.clone();
                let layouts = layouts.clone();
                std::thread::spawn(move || -> ThreadResult {
                    // The ring buffer absorbs bursts, so the reader can yield the CPU to
                    // the workload it measures; it catches up when the CPU is idle.
                    // SAFETY: plain syscalls on the calling thread.
                    unsafe {
                        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                        libc::setpriority(libc::PRIO_PROCESS, tid, READER_NICE);
                    }
                    let mut buf = vec![0u8; page_size];
                    let mut out = Records::default();
                    let mut st = ReaderStats::default();
                    loop {
                        let stopping = stop.load(Ordering::Acquire);
                        match f.read(&mut buf) {
                            Ok(0) => {
                                if stopping {
                                    break;
                                }
                                std::thread::sleep(idle_sleep);
                            }
                            Ok(n) => {
                                let info = parse_page(&buf[..n], &header, &layouts, &mut out);
                                st.pages += 1;
                                st.bytes += n as u64;
                                st.events += info.events;
                                st.skipped += info.skipped;
                                st.pages_with_missed += info.missed as u64;
                                st.missed_stored += info.missed_count;
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                                if stopping {
                                    break; // tracing was off before this read: drained
                                }
                                std::thread::sleep(idle_sleep);
                            }
                            Err(e) if e.kind() == ErrorKind::Interrupted => {}
                            Err(e) => return Err(format!("reading trace_pipe_raw: {e}")),
                        }
                    }
                    Ok((out, st))
                })
            })
            .collect();
        Ok(RawCapture { stop, threads })
    }

    /// Drain and join every reader; records merged in time order.
    pub fn finish(mut self) -> Result<(Records, ReaderStats), String> {
        self.stop.store(true, Ordering::Release);
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
    }
}
