//! Per-request passes of trace analysis that need state (hash maps), done in one pass
//! over events in time order. Everything vectorisable stays in numpy.

use std::collections::{HashMap, VecDeque};

use super::{EV_COMPLETE, EV_ISSUE, OP_FLUSH, OP_WRITE};

/// For each event: the issue-to-complete latency in ns on the complete event that ends a
/// request (-1 elsewhere or when the issue is not in the trace), and whether the event
/// is a completed request as /sys/block/DEV/stat counts it (1) or not (0).
///
/// Counting rules (measured on loop devices without FUA): every completion counts,
/// except a 0-sector write completion that repeats an earlier data completion at the
/// same sector with the same op and flags (the kernel's flush machinery ends a FUA
/// write a second time). 0-sector write completions without such a twin are empty
/// preflush writes, which the kernel counts as writes.
pub fn match_requests(
    time_ns: &[u64],
    event: &[u8],
    dev: &[u32],
    sector: &[u64],
    nr_sector: &[u32],
    op: &[u8],
    flags: &[u8],
) -> (Vec<i64>, Vec<u8>) {
    let n = time_ns.len();
    let mut latency = vec![-1i64; n];
    let mut counted = vec![0u8; n];
    // (dev, sector, op) -> issue times not yet completed (FIFO)
    let mut issued: HashMap<(u32, u64, u8), VecDeque<u64>> = HashMap::new();
    // (dev, sector, op, flags) -> data write completions a second, empty one may repeat
    let mut twins: HashMap<(u32, u64, u8), u32> = HashMap::new();
    for i in 0..n {
        let key = (dev[i], sector[i], op[i]);
        match event[i] {
            EV_ISSUE
                if op[i] != OP_FLUSH => {
                    issued.entry(key).or_default().push_back(time_ns[i]);
                }
            EV_COMPLETE => {
                if op[i] == OP_WRITE && nr_sector[i] == 0 {
                    let tkey = (dev[i], sector[i], flags[i]);
                    if let Some(c) = twins.get_mut(&tkey) {
                        if *c > 0 {
                            *c -= 1;
                            continue; // second completion of a FUA write
                        }
                    }
                }
                counted[i] = 1;
                if op[i] == OP_WRITE && nr_sector[i] > 0 {
                    *twins.entry((dev[i], sector[i], flags[i])).or_default() = 1;
                }
                if op[i] != OP_FLUSH {
                    if let Some(q) = issued.get_mut(&key) {
                        if let Some(t) = q.pop_front() {
                            latency[i] = time_ns[i].saturating_sub(t) as i64;
                        }
                        if q.is_empty() {
                            issued.remove(&key);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    (latency, counted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{FL_META, FL_SYNC};

    #[test]
    fn fua_twin_is_not_counted_but_empty_preflush_is() {
        // WSM 128+8 issue, complete, FF, complete WSM 128+0 (twin); WS 0+0 (empty preflush)
        let time = [0, 10, 20, 30, 40, 50];
        let event = [EV_ISSUE, EV_COMPLETE, EV_ISSUE, EV_COMPLETE, EV_COMPLETE, EV_COMPLETE];
        let dev = [1; 6];
        let sector = [128, 128, 0, u64::MAX, 128, 0];
        let nr = [8, 8, 0, 0, 0, 0];
        let op = [OP_WRITE, OP_WRITE, OP_FLUSH, OP_FLUSH, OP_WRITE, OP_WRITE];
        let fl = [FL_SYNC | FL_META, FL_SYNC | FL_META, 1, 1, FL_SYNC | FL_META, FL_SYNC];
        let (lat, counted) = match_requests(&time, &event, &dev, &sector, &nr, &op, &fl);
        assert_eq!(counted, vec![0, 1, 0, 1, 0, 1]);
        assert_eq!(lat[1], 10);
        assert_eq!(lat[4], -1);
    }
}
