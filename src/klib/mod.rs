//! Small kernel library helpers (include/linux/log2.h, lib/flex_proportions.c).

pub mod flex_proportions;
pub mod proportions;

/// `ilog2(x)`: floor(log2 x) for x ≥ 1 (0 for x = 0, where the kernel is undefined).
pub fn ilog2(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        63 - x.leading_zeros() as u64
    }
}

/// `roundup_pow_of_two(x)`: the smallest power of two ≥ x.
pub fn roundup_pow_of_two(x: u64) -> u64 {
    x.max(1).next_power_of_two()
}

/// `int_sqrt(x)`: floor(√x) (lib/math/int_sqrt.c computes the same value).
pub fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// `DIV_ROUND_UP(a, b)`.
pub fn div_round_up(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn bit_helpers() {
        assert_eq!(ilog2(1), 0);
        assert_eq!((int_sqrt(512), int_sqrt(1024), int_sqrt(0)), (22, 32, 0));
        assert_eq!(ilog2(199_951), 17);
        assert_eq!(ilog2(25_600), 14);
        assert_eq!(roundup_pow_of_two(750), 1024);
        assert_eq!(roundup_pow_of_two(250), 256);
        assert_eq!(roundup_pow_of_two(1 + 250 / 8), 32);
        assert_eq!(roundup_pow_of_two(1024), 1024);
        assert_eq!(div_round_up(9, 8), 2);
    }
}
