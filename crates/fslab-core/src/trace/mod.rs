//! Block-layer tracing: decode tracefs ring-buffer pages of the block_rq_* events into
//! compact columns, read the per-CPU `trace_pipe_raw` files while a workload runs, and
//! the per-request passes of trace analysis (latency matching, sequentiality).
//!
//! Plain Rust; `bindings` exposes it to Python.

pub mod analyze;
pub mod capture;
pub mod format;
mod inflight;
pub mod page;
pub mod py;
pub mod summary;

pub use format::{BlockLayout, EventFormat};
pub use page::{parse_page, PageInfo, Records};

/// Event kinds, as stored in the `event` column.
pub const EV_ISSUE: u8 = 0;
pub const EV_COMPLETE: u8 = 1;
pub const EV_INSERT: u8 = 2;
pub const EV_QUEUE: u8 = 3;

/// Operations, as stored in the `op` column (decoded from rwbs).
pub const OP_READ: u8 = 0;
pub const OP_WRITE: u8 = 1;
pub const OP_FLUSH: u8 = 2;
pub const OP_DISCARD: u8 = 3;
pub const OP_OTHER: u8 = 4;

/// Flag bits of the `flags` column (decoded from rwbs).
pub const FL_PREFLUSH: u8 = 1;
pub const FL_FUA: u8 = 2;
pub const FL_AHEAD: u8 = 4;
pub const FL_SYNC: u8 = 8;
pub const FL_META: u8 = 16;
pub const FL_SECURE: u8 = 32;

/// Decode the kernel's rwbs string (blk_fill_rwbs: [F]op[F][A][S][M]) into (op, flags).
/// Bytes after the first NUL are ignored: the kernel leaves garbage there. blktrace's
/// userspace prints a pure flush as "FN": a preflush with no op is a flush. This is
/// fslab's one rwbs decoder; Python calls it through the bindings.
pub fn decode_rwbs(rwbs: &[u8]) -> (u8, u8) {
    let end = rwbs.iter().position(|&b| b == 0).unwrap_or(rwbs.len());
    let s = &rwbs[..end];
    let mut flags = 0u8;
    let mut i = 0;
    if s.len() > 1 && s[0] == b'F' && matches!(s[1], b'W' | b'R' | b'D' | b'F' | b'N') {
        flags |= FL_PREFLUSH;
        i = 1;
    }
    let mut op = match s.get(i) {
        Some(b'R') => OP_READ,
        Some(b'W') => OP_WRITE,
        Some(b'F') => OP_FLUSH,
        Some(b'D') => OP_DISCARD,
        _ => OP_OTHER,
    };
    i += 1;
    if op == OP_DISCARD && s.get(i) == Some(&b'E') {
        flags |= FL_SECURE;
        i += 1;
    }
    for &c in s.get(i..).unwrap_or(&[]) {
        flags |= match c {
            b'F' => FL_FUA,
            b'A' => FL_AHEAD,
            b'S' => FL_SYNC,
            b'M' => FL_META,
            _ => 0,
        };
    }
    if op == OP_OTHER && flags & FL_PREFLUSH != 0 {
        op = OP_FLUSH;
    }
    (op, flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwbs_decoding() {
        assert_eq!(decode_rwbs(b"WS\0garbage"), (OP_WRITE, FL_SYNC));
        assert_eq!(decode_rwbs(b"FF\0"), (OP_FLUSH, FL_PREFLUSH));
        assert_eq!(decode_rwbs(b"F"), (OP_FLUSH, 0));
        assert_eq!(decode_rwbs(b"FWFSM"), (OP_WRITE, FL_PREFLUSH | FL_FUA | FL_SYNC | FL_META));
        assert_eq!(decode_rwbs(b"RA"), (OP_READ, FL_AHEAD));
        assert_eq!(decode_rwbs(b"DE"), (OP_DISCARD, FL_SECURE));
        assert_eq!(decode_rwbs(b"FN"), (OP_FLUSH, FL_PREFLUSH));
        assert_eq!(decode_rwbs(b"N"), (OP_OTHER, 0));
        assert_eq!(decode_rwbs(b""), (OP_OTHER, 0));
        assert_eq!(decode_rwbs(b"N"), (OP_OTHER, 0));
    }
}
