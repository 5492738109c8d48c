//! `f64::ceil` followed by a saturating cast, without the libm call: x86-64's baseline has no
//! rounding instruction (`roundsd` is SSE4.1), so `ceil` is a function call, and the engine's
//! hot loop (`engine::visits`) rounds up several quotients per run of page visits. These give
//! exactly what `ceil` then `as` gives, for every input (tests below).

/// `q.ceil().min(u32::MAX as f64) as u32` for `q > 0` or NaN.
#[inline]
pub fn ceil_u32(q: f64) -> u32 {
    // NaN and anything at or above u32::MAX: `min` gives u32::MAX.
    if q.is_nan() || q >= u32::MAX as f64 {
        return u32::MAX;
    }
    let t = q as u32; // truncation toward zero, exact below 2^32 (0 for q <= 0)
    if q > 0.0 && (t as f64) < q {
        t + 1
    } else {
        t
    }
}

/// `q.ceil().max(1.0) as u64`.
#[inline]
pub fn ceil_at_least_1(q: f64) -> u64 {
    // NaN: `max` gives 1.0; q <= 1: ceil(q) <= 1.
    if q.is_nan() || q <= 1.0 {
        return 1;
    }
    if q >= u64::MAX as f64 {
        return u64::MAX; // `as` saturates
    }
    let t = q as u64; // exact: above 2^53 every f64 is an integer
    if (t as f64) < q {
        t + 1
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cases() -> Vec<f64> {
        let mut v = vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            -0.5,
            -1.0,
            f64::MIN_POSITIVE,
            1e-300,
            0.3,
            0.5,
            1.0,
            1.0 + f64::EPSILON,
            1.5,
            2.0,
            2.5,
            1e15 + 0.5,
            4503599627370495.5,
            9007199254740993.0,
            u32::MAX as f64 - 0.5,
            u32::MAX as f64,
            u32::MAX as f64 + 1.0,
            1e19,
            u64::MAX as f64,
            1e300,
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if f.is_finite() {
                v.push(f);
            }
            v.push((x % 10_000_000) as f64 / 997.0);
        }
        v
    }

    #[test]
    fn ceil_u32_is_ceil_then_min_then_cast() {
        for q in cases().into_iter().filter(|q| q.is_nan() || *q > 0.0) {
            assert_eq!(ceil_u32(q), q.ceil().min(u32::MAX as f64) as u32, "q = {q:e}");
        }
    }

    #[test]
    fn ceil_at_least_1_is_ceil_then_max_then_cast() {
        for q in cases() {
            assert_eq!(ceil_at_least_1(q), q.ceil().max(1.0) as u64, "q = {q:e}");
        }
    }
}
