//! FP8 e4m3 (OCP / NVIDIA "E4M3FN") conversions on the host: GEMM inputs are rounded to
//! it before upload, and the CPU-side checks need the same values the device read. The
//! `half` crate covers f16 and bf16 but not FP8.

/// FP8 e4m3 (bias 7, no infinities, max 448): the value of a byte.
pub fn fp8_e4m3_to_f32(byte: u8) -> f32 {
    let sign = if byte & 0x80 != 0 { -1.0 } else { 1.0 };
    let exponent = ((byte >> 3) & 0x0f) as i32;
    let mantissa = (byte & 0x07) as f32;
    if exponent == 0x0f && byte & 0x07 == 0x07 {
        return f32::NAN;
    }
    if exponent == 0 {
        sign * mantissa / 8.0 * 2f32.powi(-6)
    } else {
        sign * (1.0 + mantissa / 8.0) * 2f32.powi(exponent - 7)
    }
}

/// The nearest e4m3 byte to `x` (ties to even), saturating at ±448.
pub fn fp8_e4m3_from_f32(x: f32) -> u8 {
    let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
    let magnitude = x.abs().min(448.0);
    // The 127 finite non-negative codes are in increasing order: binary search.
    let (mut lo, mut hi) = (0u8, 0x7eu8);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fp8_e4m3_to_f32(mid) <= magnitude {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let below = lo;
    let code = if below < 0x7e {
        let (down, up) = (fp8_e4m3_to_f32(below), fp8_e4m3_to_f32(below + 1));
        let (dd, du) = (magnitude - down, up - magnitude);
        if du < dd || (du == dd && below & 1 == 1) {
            below + 1
        } else {
            below
        }
    } else {
        below
    };
    sign | code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_round_trips_every_code_and_rounds_to_nearest() {
        for byte in 0u8..=0xff {
            let v = fp8_e4m3_to_f32(byte);
            if v.is_nan() {
                continue;
            }
            // -0 encodes as 0x80 and +0 as 0x00: both decode to zero.
            let back = fp8_e4m3_from_f32(v);
            assert_eq!(fp8_e4m3_to_f32(back), v, "byte {byte:#x}");
        }
        assert_eq!(fp8_e4m3_to_f32(0x7e), 448.0);
        assert_eq!(fp8_e4m3_from_f32(1000.0), 0x7e);
        assert_eq!(fp8_e4m3_to_f32(fp8_e4m3_from_f32(1.06)), 1.0);
        assert_eq!(fp8_e4m3_to_f32(fp8_e4m3_from_f32(1.07)), 1.125);
        assert_eq!(fp8_e4m3_to_f32(fp8_e4m3_from_f32(-0.3)), -0.3125);
    }
}
