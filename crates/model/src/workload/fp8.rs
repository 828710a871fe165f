//! FP8 conversions on the host, e4m3 (OCP / NVIDIA "E4M3FN") and e5m2 (OCP E5M2, the
//! upper byte of an IEEE f16): GEMM inputs are rounded to them before upload, and the
//! CPU-side checks need the same values the device read. The `half` crate covers f16 and
//! bf16 but not FP8.

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
    nearest_code(x, 0x7e, fp8_e4m3_to_f32)
}

/// FP8 e5m2 (bias 15, IEEE-style infinities and NaNs, max finite 57344): the value of a
/// byte. It is the upper byte of the f16 with the same sign, exponent and mantissa.
pub fn fp8_e5m2_to_f32(byte: u8) -> f32 {
    half::f16::from_bits((byte as u16) << 8).to_f32()
}

/// The nearest e5m2 byte to `x` (ties to even), saturating at ±57344 as cuBLASLt's
/// saturating conversions do (inputs never reach it: they are unit-normal).
pub fn fp8_e5m2_from_f32(x: f32) -> u8 {
    nearest_code(x, 0x7b, fp8_e5m2_to_f32)
}

/// The nearest code to `x` among the finite non-negative codes `0..=max_code` (in
/// increasing order of value for both formats), ties to the even code, with `x`'s sign.
fn nearest_code(x: f32, max_code: u8, decode: fn(u8) -> f32) -> u8 {
    let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
    let magnitude = x.abs().min(decode(max_code));
    let (mut lo, mut hi) = (0u8, max_code);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if decode(mid) <= magnitude {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let below = lo;
    let code = if below < max_code {
        let (down, up) = (decode(below), decode(below + 1));
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

    #[test]
    fn e5m2_round_trips_every_finite_code_and_rounds_to_nearest() {
        for byte in 0u8..=0xff {
            let v = fp8_e5m2_to_f32(byte);
            if !v.is_finite() {
                continue;
            }
            assert_eq!(fp8_e5m2_to_f32(fp8_e5m2_from_f32(v)), v, "byte {byte:#x}");
        }
        assert_eq!(fp8_e5m2_to_f32(0x7b), 57344.0);
        assert!(fp8_e5m2_to_f32(0x7c).is_infinite());
        assert_eq!(fp8_e5m2_from_f32(1e9), 0x7b);
        // Two mantissa bits: 1, 1.25, 1.5, 1.75; 1.125 is a tie and goes to the even 1.0.
        assert_eq!(fp8_e5m2_to_f32(fp8_e5m2_from_f32(1.125)), 1.0);
        assert_eq!(fp8_e5m2_to_f32(fp8_e5m2_from_f32(1.13)), 1.25);
        assert_eq!(fp8_e5m2_to_f32(fp8_e5m2_from_f32(-0.3)), -0.3125);
        // Smallest subnormal is 2^-16.
        assert_eq!(fp8_e5m2_to_f32(0x01), 2f32.powi(-16));
    }
}
