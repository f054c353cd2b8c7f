//! Decoding of tracefs ring-buffer pages (`per_cpu/cpuN/trace_pipe_raw`).
//!
//! A page is a header (u64 timestamp, then a commit word whose low 30 bits are the
//! data size; bit 31 = events were lost before this page, bit 30 = their count is
//! stored after the data) followed by events. Each event starts with a 32-bit word:
//! type_len in the low 5 bits, time delta in the high 27. type_len 1..=28 means a
//! payload of type_len*4 bytes; 0 means the payload length (+4) is in the next word;
//! 29 is padding (a discarded event: it still advances the clock), 30 a time extend,
//! 31 an absolute timestamp.

use std::collections::HashMap;

use super::format::BlockLayout;
use super::decode_rwbs;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
const TS_MSB: u64 = 0xf8u64 << 56;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 30) - 1;

/// No comm (block_rq_complete has none).
pub const NO_COMM: u16 = u16::MAX;

/// Page header layout, from `events/header_page`.
#[derive(Debug, Clone, Copy)]
pub struct PageHeader {
    pub commit_offset: usize,
    pub commit_size: usize,
    pub data_offset: usize,
}

impl PageHeader {
    pub const DEFAULT: PageHeader = PageHeader { commit_offset: 8, commit_size: 8, data_offset: 16 };

    /// Parse `events/header_page`; fields missing from it keep the 64-bit defaults.
    pub fn parse(text: &str) -> PageHeader {
        let mut h = PageHeader::DEFAULT;
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("field:") else { continue };
            let Some((name, o, s)) = super::format::parse_field(rest) else { continue };
            match name.as_str() {
                "commit" => {
                    h.commit_offset = o;
                    h.commit_size = s;
                }
                "data" => h.data_offset = o,
                _ => {}
            }
        }
        h
    }
}

/// Decoded events as columns: only what the analysis needs (about 30 bytes an event
/// instead of the kernel's ~70).
#[derive(Debug, Default, Clone)]
pub struct Records {
    pub time_ns: Vec<u64>,
    pub event: Vec<u8>,
    pub dev: Vec<u32>,
    pub sector: Vec<u64>,
    pub nr_sector: Vec<u32>,
    pub op: Vec<u8>,
    pub flags: Vec<u8>,
    pub pid: Vec<i32>,
    pub comm: Vec<u16>,
    pub comm_names: Vec<String>,
    comm_index: HashMap<[u8; 16], u16>,
}

impl Records {
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }

    fn intern(&mut self, raw: &[u8]) -> u16 {
        let mut key = [0u8; 16];
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len()).min(16);
        key[..end].copy_from_slice(&raw[..end]);
        if let Some(&i) = self.comm_index.get(&key) {
            return i;
        }
        let i = self.comm_names.len().min(NO_COMM as usize - 1) as u16;
        if (i as usize) == self.comm_names.len() {
            self.comm_names.push(String::from_utf8_lossy(&key[..end]).into_owned());
        }
        self.comm_index.insert(key, i);
        i
    }

    /// Merge per-CPU record sets into one, ordered by time (stable: equal times keep
    /// their per-CPU order). Each input is already sorted, so the sort only merges runs.
    pub fn merge(parts: Vec<Records>) -> Records {
        let mut out = Records::default();
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let mut all = Records::default();
        for p in parts {
            let remap: Vec<u16> = p.comm_names.iter().map(|n| {
                let mut key = [0u8; 16];
                let b = n.as_bytes();
                key[..b.len().min(16)].copy_from_slice(&b[..b.len().min(16)]);
                all.intern(&key)
            }).collect();
            all.time_ns.extend_from_slice(&p.time_ns);
            all.event.extend_from_slice(&p.event);
            all.dev.extend_from_slice(&p.dev);
            all.sector.extend_from_slice(&p.sector);
            all.nr_sector.extend_from_slice(&p.nr_sector);
            all.op.extend_from_slice(&p.op);
            all.flags.extend_from_slice(&p.flags);
            all.pid.extend_from_slice(&p.pid);
            all.comm.extend(p.comm.iter().map(|&c| if c == NO_COMM { NO_COMM } else { remap[c as usize] }));
        }
        let mut order: Vec<u32> = (0..total as u32).collect();
        order.sort_by_key(|&i| all.time_ns[i as usize]);
        macro_rules! take {
            ($f:ident) => {
                out.$f = order.iter().map(|&i| all.$f[i as usize]).collect();
            };
        }
        take!(time_ns);
        take!(event);
        take!(dev);
        take!(sector);
        take!(nr_sector);
        take!(op);
        take!(flags);
        take!(pid);
        take!(comm);
        out.comm_names = all.comm_names;
        out.comm_index = all.comm_index;
        out
    }
}

/// What one page told us besides its events.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct PageInfo {
    pub events: u64,
    /// events of other types or too short to decode (not block_rq_* we asked for).
    pub skipped: u64,
    /// events of a kind we asked for, but of a device we did not (left out).
    pub foreign: u64,
    /// the kernel flagged lost events before this page.
    pub missed: bool,
    /// how many, when the kernel stored the count (0 if unknown).
    pub missed_count: u64,
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// Decode one page into `out`. Malformed input stops decoding of that page (never
/// panics): a truncated event ends it.
pub fn parse_page(page: &[u8], header: &PageHeader, layouts: &[BlockLayout], out: &mut Records) -> PageInfo {
    let mut info = PageInfo::default();
    let d0 = header.data_offset;
    if page.len() < d0 {
        return info;
    }
    let mut ts = u64_at(page, 0);
    let commit = if header.commit_size == 8 {
        u64_at(page, header.commit_offset)
    } else {
        u32_at(page, header.commit_offset) as u64
    };
    let size = (commit & COMMIT_MASK) as usize;
    info.missed = commit & MISSED_EVENTS != 0;
    let end = (d0 + size).min(page.len());
    if info.missed && commit & MISSED_STORED != 0 && end + 8 <= page.len() {
        info.missed_count = u64_at(page, end);
    }
    let mut pos = d0;
    while pos + 4 <= end {
        let hdr = u32_at(page, pos);
        let type_len = hdr & 31;
        let delta = (hdr >> 5) as u64;
        match type_len {
            TYPE_PADDING => {
                if delta == 0 || pos + 8 > end {
                    break; // the rest of the page is empty
                }
                ts = ts.wrapping_add(delta);
                pos += 4 + u32_at(page, pos + 4) as usize;
            }
            TYPE_TIME_EXTEND => {
                if pos + 8 > end {
                    break;
                }
                ts = ts.wrapping_add(((u32_at(page, pos + 4) as u64) << TS_SHIFT) | delta);
                pos += 8;
            }
            TYPE_TIME_STAMP => {
                if pos + 8 > end {
                    break;
                }
                let mut abs = ((u32_at(page, pos + 4) as u64) << TS_SHIFT) | delta;
                // Only the low 59 bits are stored; the top ones come from the current time.
                if ts & TS_MSB != 0 {
                    abs |= ts & TS_MSB;
                    if abs < ts {
                        abs = abs.wrapping_add(1 << 59);
                    }
                }
                ts = abs;
                pos += 8;
            }
            _ => {
                let (start, len) = if type_len == 0 {
                    if pos + 8 > end {
                        break;
                    }
                    (pos + 8, (u32_at(page, pos + 4) as usize).saturating_sub(4))
                } else {
                    (pos + 4, type_len as usize * 4)
                };
                if start + len > end || len < 2 {
                    break;
                }
                ts = ts.wrapping_add(delta);
                let payload = &page[start..start + len];
                pos = start + len;
                let id = u16::from_le_bytes([payload[0], payload[1]]);
                match layouts.iter().find(|l| l.id == id) {
                    Some(l) if payload.len() >= l.min_len => {
                        if l.devs.is_empty() || l.devs.contains(&u32_at(payload, l.dev)) {
                            push(payload, l, ts, out);
                            info.events += 1;
                        } else {
                            info.foreign += 1;
                        }
                    }
                    _ => info.skipped += 1,
                }
            }
        }
    }
    info
}

fn push(p: &[u8], l: &BlockLayout, ts: u64, out: &mut Records) {
    let (op, flags) = decode_rwbs(&p[l.rwbs.0..l.rwbs.0 + l.rwbs.1]);
    let comm = match l.comm {
        Some((o, s)) => out.intern(&p[o..o + s]),
        None => NO_COMM,
    };
    // Flush completions print sector 2^64-1; it is kept as is (the analysis skips flushes).
    let sector = u64_at(p, l.sector);
    let nr = u32_at(p, l.nr_sector);
    out.time_ns.push(ts);
    out.event.push(l.kind);
    out.dev.push(u32_at(p, l.dev));
    out.sector.push(sector);
    out.nr_sector.push(nr);
    out.op.push(op);
    out.flags.push(flags);
    out.pid.push(u32_at(p, l.pid) as i32);
    out.comm.push(comm);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{EV_COMPLETE, EV_ISSUE, FL_SYNC, OP_WRITE};

    fn layout(kind: u8, id: u16) -> BlockLayout {
        BlockLayout {
            id, kind, pid: 4, dev: 8, sector: 16, nr_sector: 24, rwbs: (34, 10),
            comm: if kind == EV_ISSUE { Some((44, 16)) } else { None },
            min_len: if kind == EV_ISSUE { 60 } else { 44 },
            devs: Vec::new(),
        }
    }

    fn payload(id: u16, pid: i32, dev: u32, sector: u64, nr: u32, rwbs: &[u8], comm: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; 64];
        p[0..2].copy_from_slice(&id.to_le_bytes());
        p[4..8].copy_from_slice(&pid.to_le_bytes());
        p[8..12].copy_from_slice(&dev.to_le_bytes());
        p[16..24].copy_from_slice(&sector.to_le_bytes());
        p[24..28].copy_from_slice(&nr.to_le_bytes());
        p[34..34 + rwbs.len()].copy_from_slice(rwbs);
        p[44..44 + comm.len()].copy_from_slice(comm);
        p
    }

    fn event(delta: u32, payload: &[u8]) -> Vec<u8> {
        let mut e = ((delta << 5) | (payload.len() as u32 / 4)).to_le_bytes().to_vec();
        e.extend_from_slice(payload);
        e
    }

    #[test]
    fn decodes_events_deltas_extends_padding_and_absolute_stamps() {
        let issue = payload(7, 42, (7 << 20) | 3, 2048, 8, b"WS\0xx", b"fio");
        let mut data = Vec::new();
        data.extend(event(10, &issue));
        // a discarded event (padding with a delta) still advances the clock
        data.extend(((5u32 << 5) | TYPE_PADDING).to_le_bytes());
        data.extend(12u32.to_le_bytes());
        data.extend([0u8; 8]);
        // time extend: 1 << 27 + 3
        data.extend(((3u32 << 5) | TYPE_TIME_EXTEND).to_le_bytes());
        data.extend(1u32.to_le_bytes());
        data.extend(event(0, &payload(8, 0, (7 << 20) | 3, 2048, 8, b"WS", b"")));
        // absolute timestamp 5_000_000_000
        let abs: u64 = 5_000_000_000;
        data.extend(((((abs & ((1 << 27) - 1)) as u32) << 5) | TYPE_TIME_STAMP).to_le_bytes());
        data.extend(((abs >> 27) as u32).to_le_bytes());
        // type_len 0: length in the next word
        let long = payload(7, 43, 1, 99, 16, b"R", b"kworker/0:1");
        data.extend((1u32 << 5).to_le_bytes());
        data.extend((long.len() as u32 + 4).to_le_bytes());
        data.extend(&long);
        let mut page = vec![0u8; 4096];
        page[0..8].copy_from_slice(&1000u64.to_le_bytes());
        page[8..16].copy_from_slice(&(data.len() as u64 | MISSED_EVENTS).to_le_bytes());
        page[16..16 + data.len()].copy_from_slice(&data);
        let mut out = Records::default();
        let layouts = [layout(EV_ISSUE, 7), layout(EV_COMPLETE, 8)];
        let info = parse_page(&page, &PageHeader::DEFAULT, &layouts, &mut out);
        assert_eq!(info.events, 3);
        assert!(info.missed);
        assert_eq!(out.time_ns, vec![1010, 1015 + (1 << 27) + 3, 5_000_000_001]);
        assert_eq!(out.event, vec![EV_ISSUE, EV_COMPLETE, EV_ISSUE]);
        assert_eq!(out.op[0], OP_WRITE);
        assert_eq!(out.flags[0], FL_SYNC);
        assert_eq!(out.dev[0], (7 << 20) | 3);
        assert_eq!(out.comm, vec![0, NO_COMM, 1]);
        assert_eq!(out.comm_names, vec!["fio".to_string(), "kworker/0:1".to_string()]);
        assert_eq!(out.nr_sector[2], 16);
    }

    #[test]
    fn truncated_pages_do_not_panic() {
        let mut page = vec![0u8; 64];
        page[8..16].copy_from_slice(&4000u64.to_le_bytes());
        page[16] = 5; // claims a 20-byte payload that is not there
        let mut out = Records::default();
        parse_page(&page, &PageHeader::DEFAULT, &[layout(EV_ISSUE, 7)], &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn events_of_devices_not_asked_for_are_counted_and_left_out() {
        let mine = (7u32 << 20) | 3;
        let mut data = Vec::new();
        data.extend(event(10, &payload(7, 42, mine, 8, 8, b"W", b"fio")));
        data.extend(event(10, &payload(7, 43, (8 << 20) | 1, 16, 8, b"R", b"other")));
        data.extend(event(10, &payload(8, 0, mine, 8, 8, b"W", b"")));
        let mut page = vec![0u8; 4096];
        page[8..16].copy_from_slice(&(data.len() as u64).to_le_bytes());
        page[16..16 + data.len()].copy_from_slice(&data);
        let mut layouts = [layout(EV_ISSUE, 7), layout(EV_COMPLETE, 8)];
        layouts[0].devs = vec![mine];
        layouts[1].devs = vec![mine];
        let mut out = Records::default();
        let info = parse_page(&page, &PageHeader::DEFAULT, &layouts, &mut out);
        assert_eq!((info.events, info.foreign, info.skipped), (2, 1, 0));
        assert_eq!(out.dev, vec![mine, mine]);
        assert_eq!(out.time_ns, vec![10, 30]); // the left-out event still advances the clock
        // No device named: every device's events are kept.
        let mut out = Records::default();
        let info = parse_page(&page, &PageHeader::DEFAULT, &[layout(EV_ISSUE, 7), layout(EV_COMPLETE, 8)], &mut out);
        assert_eq!((info.events, info.foreign), (3, 0));
    }
}
