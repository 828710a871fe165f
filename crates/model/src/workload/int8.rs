//! INT8 GEMM: int8 inputs, int32 accumulation. Two functions share the inputs:
//! - `int8`: C = A·B in int32, no requantisation (torch `_int_mm`, cuBLASLt IMMA);
//! - `int8q`: the same sums requantised to int8 with one per-tensor scale, as an
//!   inference engine writes an activation ([`Requant`] says how, exactly).
//!
//! Integer sums are exact, so every backend's result is compared for equality with an
//! exact i64 reference on the same inputs: a kernel that is off by one anywhere it is
//! checked fails, and no tolerance can hide a sign or offset bug.

use super::random::normal_f64;
use super::{Accuracy, GemmShape};

/// The inputs are unit-normal values quantised with scale `INPUT_SIGMAS / 127`: ±3σ maps
/// to ±127 and the tails saturate at −128 and 127, so both edge values occur in every
/// large input (the values where signed × unsigned tricks go wrong).
pub const INPUT_SIGMAS: f64 = 3.0;

/// How many standard deviations of the int32 sums map to the int8 output range in `int8q`.
pub const OUTPUT_SIGMAS: f64 = 4.0;

/// The `arithmetic` note of every int8 GEMM, on every backend: what is computed and how
/// it is checked.
pub const ARITHMETIC: &str =
    "int8 x int8, int32 sums, checked for equality with an exact i64 reference";

/// The requantisation scheme, as recorded in each `int8q` benchmark's notes.
pub const REQUANT_SCHEME: &str = "per-tensor symmetric: out = saturate_i8(round_half_even(f32(acc) * s)), \
     the product in f32; s = 127 / (4 * sqrt(K) * rms(A) * rms(B)) (a static scale fixed before \
     timing: 4 sigma of the int32 sums map to 127)";

/// `len` int8 values drawn from `seed`, quantised as [`INPUT_SIGMAS`] says.
pub fn quantized_inputs(seed: u64, len: usize) -> Vec<i8> {
    let scale = 127.0 / INPUT_SIGMAS;
    normal_f64(seed, len)
        .into_iter()
        .map(|x| (x * scale).round_ties_even().clamp(-128.0, 127.0) as i8)
        .collect()
}

/// The per-tensor requantisation of `int8q`: one f32 multiplier for the whole output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Requant {
    pub scale: f32,
}

impl Requant {
    /// The static scale for a product of `a` and `b` with inner size `k`:
    /// 127 / ([`OUTPUT_SIGMAS`] · √k · rms(a) · rms(b)), the spread of a sum of k products
    /// of independent inputs. Calibrated from the inputs once, never inside the timed call.
    pub fn for_inputs(k: usize, a: &[i8], b: &[i8]) -> Requant {
        let rms = |v: &[i8]| {
            let sum: f64 = v.iter().map(|&x| (x as f64) * (x as f64)).sum();
            (sum / v.len().max(1) as f64).sqrt().max(1.0)
        };
        let spread = OUTPUT_SIGMAS * (k.max(1) as f64).sqrt() * rms(a) * rms(b);
        Requant {
            scale: (127.0 / spread) as f32,
        }
    }

    /// One output: the int32 sum times the scale in f32 (the conversion and the product
    /// each rounded to nearest even, as `cvtdq2ps`/`mulps` do), rounded half to even,
    /// saturated to int8.
    #[inline]
    pub fn apply(self, acc: i32) -> i8 {
        ((acc as f32) * self.scale)
            .clamp(-128.0, 127.0)
            .round_ties_even() as i8
    }
}

/// The exact sum Σ_p a[i,p]·b[p,j] of row-major int8 A (M×K) and B (K×N).
pub fn exact_entry(shape: GemmShape, a: &[i8], b: &[i8], i: usize, j: usize) -> i64 {
    let GemmShape { n, k, .. } = shape;
    (0..k)
        .map(|p| a[i * k + p] as i64 * b[p * n + j] as i64)
        .sum()
}

/// The full exact product as int32 (for tests and small shapes): a blocked i64 loop, and
/// an error if a sum does not fit in int32 (then no int32 kernel can be right).
pub fn exact_product(shape: GemmShape, a: &[i8], b: &[i8]) -> Result<Vec<i32>, String> {
    check_sizes(shape, a, b)?;
    let GemmShape { m, n, k } = shape;
    let mut c = vec![0i64; m * n];
    for i in 0..m {
        let row = &mut c[i * n..(i + 1) * n];
        for p in 0..k {
            let x = a[i * k + p] as i64;
            for (dst, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *dst += x * y as i64;
            }
        }
    }
    c.into_iter()
        .map(|v| i32::try_from(v).map_err(|_| format!("{shape}: a sum {v} overflows int32")))
        .collect()
}

fn check_sizes(shape: GemmShape, a: &[i8], b: &[i8]) -> Result<(), String> {
    super::gemm::check_input_sizes(shape, a.len(), b.len())
}

/// Compares the int32 output `c` with the exact sums at `positions`: equality or the
/// first difference.
pub fn check_int8(
    shape: GemmShape,
    a: &[i8],
    b: &[i8],
    c: impl Fn(usize, usize) -> i32,
    positions: &[(usize, usize)],
) -> Result<Accuracy, String> {
    check_sizes(shape, a, b)?;
    for &(i, j) in positions {
        let want = exact_entry(shape, a, b, i, j);
        let got = c(i, j);
        if got as i64 != want {
            return Err(format!(
                "int8 {shape}: C[{i},{j}] = {got} but the exact sum is {want}"
            ));
        }
    }
    Ok(exact_accuracy(shape, positions))
}

/// The accuracy set of a result that equalled the exact reference at every checked entry,
/// naming what was checked (all of C, or how many of its entries).
fn exact_accuracy(shape: GemmShape, positions: &[(usize, usize)]) -> Accuracy {
    let all = shape.m * shape.n;
    let (m, n) = (shape.m, shape.n);
    if positions.len() >= all {
        Accuracy::exact(
            all as u64,
            format!("all of C ({m}x{n}), exact integer sums"),
            false,
        )
    } else {
        Accuracy::exact(
            positions.len() as u64,
            format!(
                "{} edge and random entries of C ({m}x{n}), exact integer sums",
                positions.len()
            ),
            true,
        )
    }
}

/// Compares the requantised output `c` with [`Requant::apply`] of the exact sums at
/// `positions`: equality or the first difference.
pub fn check_int8q(
    shape: GemmShape,
    a: &[i8],
    b: &[i8],
    requant: Requant,
    c: impl Fn(usize, usize) -> i8,
    positions: &[(usize, usize)],
) -> Result<Accuracy, String> {
    check_sizes(shape, a, b)?;
    for &(i, j) in positions {
        let sum = exact_entry(shape, a, b, i, j);
        let sum = i32::try_from(sum).map_err(|_| format!("{shape}: sum {sum} overflows int32"))?;
        let want = requant.apply(sum);
        let got = c(i, j);
        if got != want {
            return Err(format!(
                "int8q {shape}: C[{i},{j}] = {got} but the exact sum {sum} requantised \
                 (scale {}) is {want}",
                requant.scale
            ));
        }
    }
    Ok(exact_accuracy(shape, positions))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::gemm::check_positions;

    #[test]
    fn inputs_reach_both_edge_values_and_stay_centred() {
        let v = quantized_inputs(7, 1 << 16);
        assert!(v.contains(&-128) && v.contains(&127));
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        assert!(mean.abs() < 1.0, "{mean}");
    }

    #[test]
    fn requantisation_rounds_half_to_even_and_saturates() {
        let r = Requant { scale: 0.5 };
        assert_eq!(r.apply(5), 2); // 2.5 → 2
        assert_eq!(r.apply(7), 4); // 3.5 → 4
        assert_eq!(r.apply(-5), -2);
        assert_eq!(r.apply(1000), 127);
        assert_eq!(r.apply(-1000), -128);
        assert_eq!(r.apply(i32::MAX), 127);
        assert_eq!(r.apply(i32::MIN), -128);
        // The scale maps 4σ of the sums to 127: about 1 in 16 000 outputs saturate.
        let (a, b) = (quantized_inputs(1, 64 * 256), quantized_inputs(2, 256 * 64));
        let s = Requant::for_inputs(256, &a, &b);
        let shape = GemmShape::new(64, 64, 256);
        let c = exact_product(shape, &a, &b).unwrap();
        let out: Vec<i8> = c.iter().map(|&x| s.apply(x)).collect();
        let spread = out.iter().map(|&x| (x as f64).powi(2)).sum::<f64>() / out.len() as f64;
        // rms of the output ≈ 127/4 ≈ 32.
        assert!((20.0..45.0).contains(&spread.sqrt()), "{}", spread.sqrt());
    }

    #[test]
    fn the_check_passes_the_exact_product_and_fails_any_difference() {
        let shape = GemmShape::new(5, 7, 9);
        let mut a = quantized_inputs(3, 45);
        let b = quantized_inputs(4, 63);
        a[0] = -128;
        let c = exact_product(shape, &a, &b).unwrap();
        let all: Vec<_> = (0..5).flat_map(|i| (0..7).map(move |j| (i, j))).collect();
        check_int8(shape, &a, &b, |i, j| c[i * 7 + j], &all).unwrap();
        let err = check_int8(
            shape,
            &a,
            &b,
            |i, j| c[i * 7 + j] + (i == 4 && j == 6) as i32,
            &all,
        )
        .unwrap_err();
        assert!(err.contains("C[4,6]"), "{err}");
        let r = Requant::for_inputs(9, &a, &b);
        let q: Vec<i8> = c.iter().map(|&x| r.apply(x)).collect();
        check_int8q(shape, &a, &b, r, |i, j| q[i * 7 + j], &all).unwrap();
        assert!(check_int8q(shape, &a, &b, r, |_, _| 0, &check_positions(shape, 5, 1)).is_err());
        assert!(check_int8(shape, &a[1..], &b, |_, _| 0, &all).is_err());
    }

    #[test]
    fn an_overflowing_sum_is_an_error_not_a_wrapped_value() {
        let k = 140_000;
        let shape = GemmShape::new(1, 1, k);
        let a = vec![-128i8; k];
        let b = vec![-128i8; k];
        assert!(
            exact_product(shape, &a, &b)
                .unwrap_err()
                .contains("overflows")
        );
    }
}
