//! One block-layer request as the models see it: when, what, where and how much.
//! Times are integer nanoseconds; positions are 512-byte sectors.

/// Simulated time in nanoseconds.
pub type Ns = u64;

pub const SECTOR_BYTES: u64 = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    /// Discard/TRIM: the range no longer holds data.
    Trim,
    /// Cache flush: completes when every write accepted before it is on stable media.
    Flush,
}

impl Op {
    /// Parse the op letter of a request list or the leading letter of blktrace `rwbs`.
    pub fn from_code(code: u8) -> Option<Op> {
        match code {
            b'R' | b'r' => Some(Op::Read),
            b'W' | b'w' => Some(Op::Write),
            b'D' | b'd' | b'T' | b't' => Some(Op::Trim),
            b'F' | b'f' => Some(Op::Flush),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Issue time in the trace (used by open-loop replay only).
    pub time_ns: Ns,
    pub op: Op,
    /// Force unit access: a write that completes only once on stable media.
    pub fua: bool,
    pub sector: u64,
    pub bytes: u64,
}

impl Request {
    pub fn new(time_ns: Ns, op: Op, sector: u64, bytes: u64) -> Self {
        Request { time_ns, op, fua: false, sector, bytes }
    }

    pub fn offset(&self) -> u64 {
        self.sector * SECTOR_BYTES
    }
}
