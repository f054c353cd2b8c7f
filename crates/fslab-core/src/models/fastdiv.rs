//! Exact division of 32-bit values by a divisor fixed at model construction, by one
//! multiply and a shift instead of a hardware divide (tens of cycles, on the critical
//! path of every request's address arithmetic).
//!
//! Method (Lemire, Kaser, Kurz, "Faster Remainder by Direct Computation", 2019): with
//! `c = ceil(2^63 / d)`, `floor(n * c / 2^63) == n / d` for every `n < 2^32` as long as
//! `d < 2^31`: the error `n * (c*d - 2^63) / (d * 2^63)` is below `2^-31`, too small to
//! carry the fractional part of `n / d` (at most `1 - 1/d`) past the next integer.
//! Divisors from `2^31` up have quotient 0 or 1 for 32-bit `n`, a comparison.

#[derive(Clone, Copy, Debug)]
pub struct Divisor {
    d: u32,
    /// `ceil(2^63 / d)`, or 0 for `d >= 2^31`.
    c: u64,
}

impl Divisor {
    /// Panics if `d` is 0.
    pub fn new(d: u32) -> Self {
        assert!(d >= 1, "division by zero");
        Divisor { d, c: if d < 1 << 31 { (1u64 << 63).div_ceil(d as u64) } else { 0 } }
    }

    #[inline(always)]
    pub fn get(&self) -> u32 {
        self.d
    }

    /// `n / d`.
    #[inline(always)]
    pub fn div(&self, n: u32) -> u32 {
        if self.c == 0 {
            return (n >= self.d) as u32;
        }
        ((n as u128 * self.c as u128) >> 63) as u32
    }

    /// `(n / d, n % d)`.
    #[inline(always)]
    pub fn div_rem(&self, n: u32) -> (u32, u32) {
        let q = self.div(n);
        (q, n - q * self.d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn exact_against_hardware_division() {
        let mut rng = Rng::new(11);
        let mut divisors: Vec<u32> = (1..=600).collect();
        divisors.extend([1021, 4096, 65535, 65536, 1 << 20, (1 << 31) - 1, (1 << 30) + 3, 1 << 31, (1 << 31) + 1, 3 << 30, u32::MAX - 1, u32::MAX]);
        divisors.extend((0..200).map(|_| 1 + rng.below((1 << 31) - 1) as u32));
        for &d in &divisors {
            let f = Divisor::new(d);
            let check = |n: u32| assert_eq!(f.div_rem(n), (n / d, n % d), "{n} / {d}");
            for n in [0, 1, d - 1, d, d.wrapping_add(1), u32::MAX, u32::MAX - 1, u32::MAX - d, u32::MAX / d * d, (u32::MAX / d * d).wrapping_sub(1)] {
                check(n);
            }
            for _ in 0..2000 {
                check(rng.next_u64() as u32);
            }
        }
    }
}
