//! Element types (precisions) that workloads run in, with their names in benchmark ids and
//! the tolerance a result in that precision is held to.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A precision a workload runs in. `Tf32` is f32 storage with TF32 tensor-core math; it is a
/// separate id so a TF32 number is never compared with a plain FP32 one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F64,
    F32,
    Tf32,
    F16,
    Bf16,
    Fp8E4m3,
}

impl DType {
    pub const ALL: [DType; 6] = [
        DType::F64,
        DType::F32,
        DType::Tf32,
        DType::F16,
        DType::Bf16,
        DType::Fp8E4m3,
    ];

    /// The name used in benchmark ids (`gemm/cpu/<name>/...`).
    pub fn id(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::Tf32 => "tf32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::Fp8E4m3 => "fp8e4m3",
        }
    }

    /// Bytes one element occupies in memory (TF32 is stored as f32).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F64 => 8,
            DType::F32 | DType::Tf32 => 4,
            DType::F16 | DType::Bf16 => 2,
            DType::Fp8E4m3 => 1,
        }
    }

    /// Unit roundoff of the precision the products are rounded to (2^-p for p mantissa bits).
    pub fn unit_roundoff(self) -> f64 {
        match self {
            DType::F64 => 2f64.powi(-53),
            DType::F32 => 2f64.powi(-24),
            DType::Tf32 => 2f64.powi(-11),
            DType::F16 => 2f64.powi(-11),
            DType::Bf16 => 2f64.powi(-8),
            DType::Fp8E4m3 => 2f64.powi(-4),
        }
    }

    /// Relative tolerance for a dot product of length `k` computed in this precision,
    /// measured as |got - want| / Σ|a_ip·b_pj|, the backward-error scale. Inputs are
    /// compared as stored (already rounded), so what remains is accumulation error
    /// (√k·u_acc for random-signed data; accumulation is f64 for f64 and f32 for every
    /// lower precision, as BLAS libraries and tensor cores do) plus the rounding of the
    /// product to the compute/output precision. A factor of 8 absorbs summation-order
    /// differences between libraries; a wrong index or a missing term (error of order
    /// 1/√k or more) still fails.
    pub fn dot_tolerance(self, k: usize) -> f64 {
        let accumulation = match self {
            DType::F64 => 2f64.powi(-53),
            _ => 2f64.powi(-24),
        };
        8.0 * ((k as f64).sqrt() * accumulation + self.unit_roundoff()) + 1e-15
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DType::ALL.into_iter().find(|d| d.id() == s).ok_or_else(|| {
            format!("unknown dtype '{s}' (expected one of f64, f32, tf32, f16, bf16, fp8e4m3)")
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
    fn tolerances_order_by_precision() {
        let k = 4096;
        assert!(DType::F64.dot_tolerance(k) < DType::F32.dot_tolerance(k));
        assert!(DType::F32.dot_tolerance(k) < DType::F16.dot_tolerance(k));
        assert!(DType::F16.dot_tolerance(k) < DType::Bf16.dot_tolerance(k));
        // A missing term in a dot product of unit-scale data is an error of order 1/k.
        assert!(DType::Bf16.dot_tolerance(k) < 0.1);
    }
}
