//! Element types (precisions) that workloads run in, with their names in benchmark ids and
//! the tolerance a result in that precision is held to.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A precision a workload runs in. `Tf32` is f32 storage with TF32 tensor-core math; it is a
/// separate id so a TF32 number is never compared with a plain FP32 one. `Int8` is int8
/// inputs with int32 accumulation and int32 output (torch `_int_mm`, cuBLASLt IMMA);
/// `Int8q` is the same product requantised to int8 with one per-tensor scale
/// ([`crate::workload::int8`]): two ids, because the requantisation is work of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F64,
    F32,
    Tf32,
    F16,
    Bf16,
    Fp8E4m3,
    Fp8E5m2,
    Int8,
    Int8q,
}

impl DType {
    pub const ALL: [DType; 9] = [
        DType::F64,
        DType::F32,
        DType::Tf32,
        DType::F16,
        DType::Bf16,
        DType::Fp8E4m3,
        DType::Fp8E5m2,
        DType::Int8,
        DType::Int8q,
    ];

    /// Integer precisions: their products are exact, checked for equality, and their work
    /// is counted in integer operations (TOPS), never FLOP.
    pub fn is_integer(self) -> bool {
        matches!(self, DType::Int8 | DType::Int8q)
    }

    /// The name used in benchmark ids (`gemm/cpu/<name>/...`).
    pub fn id(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::Tf32 => "tf32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::Fp8E4m3 => "fp8e4m3",
            DType::Fp8E5m2 => "fp8e5m2",
            DType::Int8 => "int8",
            DType::Int8q => "int8q",
        }
    }

    /// Bytes one element occupies in memory (TF32 is stored as f32).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F64 => 8,
            DType::F32 | DType::Tf32 => 4,
            DType::F16 | DType::Bf16 => 2,
            DType::Fp8E4m3 | DType::Fp8E5m2 | DType::Int8 | DType::Int8q => 1,
        }
    }

    /// Unit roundoff of the precision the products are rounded to (2^-p for p mantissa bits);
    /// 0 for the integer precisions, whose inputs are integers and whose sums are exact.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            DType::F64 => 2f64.powi(-53),
            DType::F32 => 2f64.powi(-24),
            DType::Tf32 => 2f64.powi(-11),
            DType::F16 => 2f64.powi(-11),
            DType::Bf16 => 2f64.powi(-8),
            DType::Fp8E4m3 => 2f64.powi(-4),
            DType::Fp8E5m2 => 2f64.powi(-3),
            DType::Int8 | DType::Int8q => 0.0,
        }
    }

    /// `x` rounded to this precision's storage (TF32 is stored as f32), as a host would
    /// round an input before uploading it.
    pub fn round_stored(self, x: f64) -> f64 {
        match self {
            DType::F64 => x,
            DType::F32 | DType::Tf32 => x as f32 as f64,
            DType::F16 => half::f16::from_f64(x).to_f64(),
            DType::Bf16 => half::bf16::from_f64(x).to_f64(),
            DType::Fp8E4m3 => {
                let byte = super::fp8::fp8_e4m3_from_f32(x as f32);
                super::fp8::fp8_e4m3_to_f32(byte) as f64
            }
            DType::Fp8E5m2 => {
                let byte = super::fp8::fp8_e5m2_from_f32(x as f32);
                super::fp8::fp8_e5m2_to_f32(byte) as f64
            }
            DType::Int8 | DType::Int8q => x.round_ties_even().clamp(-128.0, 127.0),
        }
    }

    /// How a GEMM in this precision rounds, as the libraries stackbench calls run it.
    pub fn gemm_rounding(self) -> GemmRounding {
        let f32_acc = 2f64.powi(-24);
        let (input, accumulation, output) = match self {
            DType::F64 => (0.0, 2f64.powi(-53), 2f64.powi(-53)),
            DType::F32 => (0.0, f32_acc, f32_acc),
            // Tensor cores round the stored f32 inputs to TF32 (10 explicit bits) before
            // multiplying; the reference reads the f32 values, so that rounding is ours.
            DType::Tf32 => (2f64.powi(-11), f32_acc, f32_acc),
            DType::F16 => (0.0, f32_acc, 2f64.powi(-11)),
            DType::Bf16 => (0.0, f32_acc, 2f64.powi(-8)),
            // cuBLASLt writes the FP8 product as bf16 (cuda/gemm.rs).
            DType::Fp8E4m3 | DType::Fp8E5m2 => (0.0, f32_acc, 2f64.powi(-8)),
            // Integer inputs, exact int32 sums: every bound is zero, so the check is equality.
            DType::Int8 | DType::Int8q => (0.0, 0.0, 0.0),
        };
        // Hopper's FP8 tensor cores keep about 14 bits in the accumulator between the
        // promotions into f32 registers (DeepSeek-V3 report, 3.3.2); cuBLASLt without
        // FAST_ACCUM promotes, which we take to happen at least every 128 products.
        let block = matches!(self, DType::Fp8E4m3 | DType::Fp8E5m2)
            .then_some((FP8_PROMOTION_K, 2f64.powi(-14)));
        GemmRounding {
            input,
            accumulation,
            block,
            partial: None,
            output,
        }
    }

    /// The largest |got − want| allowed for one entry of a GEMM with inner size `k`, where
    /// `want` is the f64 dot product of the stored inputs and `scale` = Σ|a_ip·b_pj|.
    ///
    /// Each rounding contributes its own bound (Higham, ch. 3): the output is rounded once,
    /// relative to the result itself (`u_out·|want|`); inputs rounded inside the library
    /// move each product by 2·u_in; f32 accumulation of random-signed terms drifts by
    /// about √k·u_acc of `scale`; FP8's short accumulator adds √b·u_block per promotion
    /// block. [`GEMM_SAFETY`] absorbs summation-order differences between libraries. The
    /// output term is relative to |want| and not to `scale` (which is √k times larger for
    /// random data): otherwise a zero output passes at large `k` in bf16 and FP8.
    pub fn dot_error_bound(self, k: usize, want_abs: f64, scale: f64) -> f64 {
        self.gemm_rounding().bound(k, want_abs, scale)
    }
}

impl GemmRounding {
    /// See [`DType::dot_error_bound`]. A library that rounds its running sums to a short
    /// precision every `partial.0` products adds, per rounding, at most u_p·|partial sum|
    /// ≤ u_p·Σ|a·b|; with random signs, √(number of roundings)·u_p·Σ|a·b|.
    pub fn bound(&self, k: usize, want_abs: f64, scale: f64) -> f64 {
        let block = self
            .block
            .map_or(0.0, |(b, u)| (b.min(k) as f64).sqrt() * u);
        let partial = self.partial.map_or(0.0, |(every, u)| {
            (k.div_ceil(every.max(1)) as f64).sqrt() * u
        });
        let per_scale = 2.0 * self.input + (k as f64).sqrt() * self.accumulation + block + partial;
        GEMM_SAFETY * (self.output * want_abs + per_scale * scale)
    }

    /// The same rounding with the running sum rounded to roundoff `u` every `every`
    /// products (a CPU library that keeps C in f16 between its K blocks).
    pub fn with_partial_sums(self, every: usize, u: f64) -> GemmRounding {
        GemmRounding {
            partial: Some((every, u)),
            ..self
        }
    }
}

/// The unit roundoffs of one GEMM precision: inputs (where the library rounds what it
/// read), accumulation, an optional short accumulator of `block.0` products with roundoff
/// `block.1`, an optional rounding of the running sum every `partial.0` products to
/// roundoff `partial.1`, and the stored output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmRounding {
    pub input: f64,
    pub accumulation: f64,
    pub block: Option<(usize, f64)>,
    pub partial: Option<(usize, f64)>,
    pub output: f64,
}

/// Headroom over the first-order rounding bound: summation order and blocking differ
/// between BLAS libraries, and the √k drift is a typical, not a worst, case.
pub const GEMM_SAFETY: f64 = 4.0;
/// Products an FP8 tensor core accumulates before cuBLASLt promotes the sum to f32.
pub const FP8_PROMOTION_K: usize = 128;

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DType::ALL.into_iter().find(|d| d.id() == s).ok_or_else(|| {
            let known: Vec<&str> = DType::ALL.iter().map(|d| d.id()).collect();
            format!("unknown dtype '{s}' (expected one of {})", known.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for d in DType::ALL {
            assert_eq!(d.id().parse::<DType>().unwrap(), d);
        }
        assert!("f128".parse::<DType>().is_err());
    }

    #[test]
    fn bounds_order_by_precision_and_stay_below_the_result() {
        let (k, want, scale) = (4096, 1.0, 50.0);
        let bound = |d: DType| d.dot_error_bound(k, want, scale);
        assert!(bound(DType::F64) < bound(DType::F32));
        assert!(bound(DType::F32) < bound(DType::Tf32));
        assert!(bound(DType::F16) < bound(DType::Bf16));
        assert!(bound(DType::Bf16) < bound(DType::Fp8E4m3));
        assert!(bound(DType::Fp8E4m3) <= bound(DType::Fp8E5m2));
        // Integer products are exact: any difference fails.
        assert_eq!(bound(DType::Int8), 0.0);
        assert_eq!(bound(DType::Int8q), 0.0);
        // Every precision must tell a zero output (error = |want|) from a right one.
        for d in DType::ALL {
            assert!(bound(d) < want / 2.0, "{d}: {}", bound(d));
        }
    }
}
