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

/// `x / d` for a power of two `d`, as the shift that the kernel's compiler
/// makes of a division by a constant such as `roundup_pow_of_two(HZ)`.
#[inline]
pub fn div_pow_of_two(x: u64, d: u64) -> u64 {
    debug_assert!(d.is_power_of_two());
    x >> d.trailing_zeros()
}

/// `a * b / c` with the product taken in 128 bits, where wbsim widens a
/// kernel expression so that it cannot overflow. The quotient is truncated
/// to 64 bits. Same value as the plain 128-bit expression; the 64-bit
/// division is used whenever the product fits (a 128-bit division is a
/// library call).
#[inline]
pub fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => (a as u128 * b as u128 / c as u128) as u64,
    }
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
        assert_eq!(div_pow_of_two(25_600 * 9, 256), 25_600 * 9 / 256);
        assert_eq!(div_pow_of_two(7, 1), 7);
        assert_eq!(mul_div(1 << 40, 1 << 40, 1 << 30), 1 << 50);
        assert_eq!(mul_div(u64::MAX, 3, 4), (u64::MAX as u128 * 3 / 4) as u64);
        assert_eq!(mul_div(1023, 104_851, 102_397), 1047);
    }
}
