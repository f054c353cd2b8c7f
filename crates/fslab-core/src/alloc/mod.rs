//! Timed file-system operations (the block-allocation micro-benchmark of seed 003): one
//! 4 KiB block read (sequential or random), one file delete, one block allocated and
//! written (sequential append or a random hole filled), each timed on its own with the
//! monotonic clock, in integer nanoseconds. `Null` times an empty operation: the floor
//! of the harness itself, to be reported beside the others.
//!
//! The timing loop is here rather than in Python so that what is measured is the system
//! call, not the interpreter around it.

pub mod py;

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Null,
    SeqRead,
    RandRead,
    Delete,
    SeqWrite,
    RandWrite,
}

impl Op {
    pub const ALL: [Op; 6] = [Op::Null, Op::SeqRead, Op::RandRead, Op::Delete, Op::SeqWrite, Op::RandWrite];

    pub fn name(self) -> &'static str {
        match self {
            Op::Null => "null",
            Op::SeqRead => "seq_read",
            Op::RandRead => "rand_read",
            Op::Delete => "delete",
            Op::SeqWrite => "seq_write",
            Op::RandWrite => "rand_write",
        }
    }

    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == name)
    }
}

/// How writes reach the device: `Fsync` buffered with an fsync after every block (the
/// fsync is inside the timed operation), `Direct` O_DIRECT, `Buffered` neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    Fsync,
    Direct,
    Buffered,
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub dir: PathBuf,
    pub count: usize,
    pub block: usize,
    pub sync: Sync,
    pub seed: u64,
    /// Files deleted by `Delete` are 1..=this many blocks long (seeded).
    pub delete_max_blocks: u64,
}

const O_DIRECT: i32 = libc::O_DIRECT;

/// A block-aligned buffer (O_DIRECT needs memory aligned to the logical block size).
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(len: usize, seed: u64) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096).expect("valid layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        let mut a = Aligned { ptr, layout };
        let mut rng = Rng::new(seed ^ 0xA110C);
        for chunk in a.as_mut().chunks_mut(8) {
            let v = rng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        a
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr points to layout.size() bytes we own.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
    fn as_ref(&self) -> &[u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

fn read_file(spec: &Spec) -> PathBuf {
    spec.dir.join("alloc-read.dat")
}

fn delete_dir(spec: &Spec) -> PathBuf {
    spec.dir.join("alloc-delete")
}

fn open(path: &Path, write: bool, create: bool, direct: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(write).create(create);
    if direct {
        o.custom_flags(O_DIRECT);
    }
    o.open(path)
}

/// Write back the whole file system holding `dir`, so what `prepare` laid out is on the
/// device before the timed phase.
fn syncfs(dir: &Path) -> io::Result<()> {
    let f = File::open(dir)?;
    // SAFETY: a valid open descriptor.
    let rc = unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&f)) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Lay out what the timed operations need: the file read by `SeqRead`/`RandRead`
/// (count blocks) and the files removed by `Delete`; written back before returning.
pub fn prepare(spec: &Spec, ops: &[Op]) -> io::Result<()> {
    fs::create_dir_all(&spec.dir)?;
    let mut rng = Rng::new(spec.seed);
    let buf = Aligned::new(spec.block * 256, spec.seed);
    if ops.iter().any(|o| matches!(o, Op::SeqRead | Op::RandRead)) {
        let f = open(&read_file(spec), true, true, false)?;
        let total = spec.count * spec.block;
        let mut off = 0;
        while off < total {
            let n = (total - off).min(buf.as_ref().len());
            f.write_all_at(&buf.as_ref()[..n], off as u64)?;
            off += n;
        }
    }
    if ops.contains(&Op::Delete) {
        let d = delete_dir(spec);
        fs::create_dir_all(&d)?;
        for i in 0..spec.count {
            let blocks = 1 + rng.below(spec.delete_max_blocks.max(1)) as usize;
            let f = open(&d.join(format!("f{i:07}")), true, true, false)?;
            let mut left = blocks * spec.block;
            let mut off = 0u64;
            while left > 0 {
                let n = left.min(buf.as_ref().len());
                f.write_all_at(&buf.as_ref()[..n], off)?;
                off += n as u64;
                left -= n;
            }
        }
    }
    syncfs(&spec.dir)
}

/// Time `spec.count` operations of one kind; returns one latency per operation in ns.
pub fn run(spec: &Spec, op: Op) -> io::Result<Vec<u64>> {
    let n = spec.count;
    let bs = spec.block;
    let mut lat = Vec::with_capacity(n);
    let mut rng = Rng::new(spec.seed.wrapping_add(op as u64 + 1));
    let mut buf = Aligned::new(bs, spec.seed);
    let direct = spec.sync == Sync::Direct;
    match op {
        Op::Null => {
            for _ in 0..n {
                let t = Instant::now();
                std::hint::black_box(&mut buf);
                lat.push(t.elapsed().as_nanos() as u64);
            }
        }
        Op::SeqRead | Op::RandRead => {
            let f = open(&read_file(spec), false, false, direct)?;
            // Random: every block once, in a seeded order, and no readahead, so no timed
            // read finds its block in the page cache (the caller starts each op cold).
            let mut order: Vec<u64> = (0..n as u64).collect();
            if op == Op::RandRead {
                for i in (1..n).rev() {
                    order.swap(i, rng.below(i as u64 + 1) as usize);
                }
                let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
                unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_RANDOM) };
            }
            for block in order {
                let t = Instant::now();
                f.read_exact_at(buf.as_mut(), block * bs as u64)?;
                lat.push(t.elapsed().as_nanos() as u64);
            }
        }
        Op::Delete => {
            let d = delete_dir(spec);
            // Delete in a seeded random order, so directory position is not a factor.
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, rng.below(i as u64 + 1) as usize);
            }
            for i in order {
                let path = d.join(format!("f{i:07}"));
                let t = Instant::now();
                fs::remove_file(&path)?;
                lat.push(t.elapsed().as_nanos() as u64);
            }
        }
        Op::SeqWrite | Op::RandWrite => {
            let name = if op == Op::SeqWrite { "alloc-seq.dat" } else { "alloc-rand.dat" };
            let path = spec.dir.join(name);
            let f = open(&path, true, true, direct)?;
            f.set_len(0)?;
            // Random: every write fills a hole of a sparse file (a seeded permutation of
            // its blocks), so each one allocates a block, as appends do.
            let mut order: Vec<u64> = (0..n as u64).collect();
            if op == Op::RandWrite {
                f.set_len((n * bs) as u64)?;
                for i in (1..n).rev() {
                    order.swap(i, rng.below(i as u64 + 1) as usize);
                }
            }
            for block in order {
                let t = Instant::now();
                f.write_all_at(buf.as_ref(), block * bs as u64)?;
                if spec.sync == Sync::Fsync {
                    f.sync_all()?;
                }
                lat.push(t.elapsed().as_nanos() as u64);
            }
        }
    }
    Ok(lat)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &Path, sync: Sync) -> Spec {
        Spec { dir: dir.to_path_buf(), count: 64, block: 4096, sync, seed: 5, delete_max_blocks: 4 }
    }

    #[test]
    fn every_op_gives_count_latencies_and_leaves_expected_files() {
        let dir = std::env::temp_dir().join(format!("fslab-alloc-test-{}", std::process::id()));
        let s = spec(&dir, Sync::Buffered);
        prepare(&s, &Op::ALL).unwrap();
        assert_eq!(fs::metadata(read_file(&s)).unwrap().len(), 64 * 4096);
        for op in Op::ALL {
            let lat = run(&s, op).unwrap();
            assert_eq!(lat.len(), 64, "{}", op.name());
            if op != Op::Null {
                assert!(lat.iter().all(|&ns| ns > 0), "{}", op.name());
            }
        }
        assert_eq!(fs::read_dir(delete_dir(&s)).unwrap().count(), 0);
        assert_eq!(fs::metadata(dir.join("alloc-rand.dat")).unwrap().len(), 64 * 4096);
        assert_eq!(fs::metadata(dir.join("alloc-seq.dat")).unwrap().len(), 64 * 4096);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::from_name(op.name()), Some(op));
        }
        assert_eq!(Op::from_name("nope"), None);
    }
}
