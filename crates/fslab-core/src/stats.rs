//! fslab's one percentile definition, used by every summary in the core (trace sizes,
//! seek distances and latencies; replay latencies): the **nearest rank**. The p-th
//! percentile of n values is the value of rank ceil(p/100 * n) in sorted order (rank 1
//! at least): always a value that was observed, which matters for discrete data such as
//! request sizes (a median request of 6 KiB interpolated between 4 and 8 KiB never
//! happened). numpy's `method="inverted_cdf"` is the same definition.

/// The 1-based rank of the p-th percentile (p on a 0–100 scale) of `n` > 0 values.
pub fn nearest_rank(n: u64, p: f64) -> u64 {
    let rank = ((p / 100.0) * n as f64).ceil() as u64;
    rank.clamp(1, n)
}

#[cfg(test)]
mod tests {
    use super::nearest_rank;

    #[test]
    fn ranks_follow_the_definition() {
        // 10 values: p50 is the 5th, p99 the 10th, p0 the 1st, p10 the 1st, p11 the 2nd.
        assert_eq!(nearest_rank(10, 50.0), 5);
        assert_eq!(nearest_rank(10, 99.0), 10);
        assert_eq!(nearest_rank(10, 0.0), 1);
        assert_eq!(nearest_rank(10, 10.0), 1);
        assert_eq!(nearest_rank(10, 11.0), 2);
        assert_eq!(nearest_rank(1, 99.9), 1);
        assert_eq!(nearest_rank(4, 50.0), 2);
    }
}
