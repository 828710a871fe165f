//! Accuracy beside speed: how far a backend's result is from a float64 reference computed
//! on the same (stored) inputs, as one set of figures every GEMM, attention and tensor-op
//! record carries. The pass/fail check that runs before timing reads the same set, so the
//! figure a report shows and the check that guards the timing cannot disagree.
//!
//! For each compared entry i, with reference `r_i` (f64), result `x_i` (widened to f64),
//! error `e_i = |x_i − r_i|` and the entry's scale `s_i` (the magnitude its rounding error
//! grows with: Σ|a·b| for a GEMM entry, |r_i| for an elementwise op; see each workload):
//!
//! - `max_abs_error` = max e_i;
//! - relative error `e_i / max(|r_i|, ε·s_i, tiny)`, where ε is the dtype's machine
//!   epsilon ([`epsilon`]) and `tiny` the smallest normal value of the dtype's storage.
//!   A reference that cancelled to below ε·s_i has fewer significant bits left than the
//!   precision holds, so no kernel in that precision can get it relatively right: it is
//!   measured against ε·s_i instead, and its relative error is capped by its error in
//!   epsilons. An exact zero result against an exact zero reference is error 0.
//!   `max_rel_error` and `mean_rel_error` are the largest and the mean of these;
//! - `max_eps_error` = max e_i / (ε · max(s_i, tiny)): the error in units of the dtype's
//!   epsilon at the entry's scale (ulp-style; for a GEMM this is the old
//!   `worst_scaled_error` divided by ε). log2 of a ratio of two of these is the number of
//!   bits one result lost against the other ([`Accuracy::bits_lost_against`]);
//! - `worst_bound_ratio` = max e_i / bound_i, where bound_i is the tolerance the workload
//!   allows that entry: above 1 (or an error that is not finite) is a wrong answer.
//!
//! Integer results (INT8 GEMM: int32 output) are compared exactly ([`AccuracyMeter::exact`]):
//! ε is 1 (the spacing of integers), every bound is 0, and a right answer has every figure
//! exactly 0.
//!
//! The reference covers the whole output unless that needs more than
//! [`REFERENCE_BUDGET_BYTES`] of float64 memory or more than [`REFERENCE_BUDGET_OPS`]
//! multiply-adds; then it covers a slice, and [`Accuracy::reference`] names it.

use super::DType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Float64 memory the reference may hold (its inputs and outputs): 1 GiB. Past it the
/// reference runs on a named slice.
pub const REFERENCE_BUDGET_BYTES: u64 = 1 << 30;
/// Multiply-adds the reference may spend: 2^31, a few seconds of f64 on one core. A GEMM of
/// 2048³ needs 2^33, so large problems are sliced by rows for time as well as memory.
pub const REFERENCE_BUDGET_OPS: u64 = 1 << 31;
/// The key under which a backend's notes carry the accuracy set (the record lifts it out).
pub const ACCURACY_NOTE: &str = "accuracy";

/// Machine epsilon of a precision: the gap between 1 and the next value, 2^(1−p) for p
/// significant bits (f32 2^-23, bf16 2^-7, fp8 e4m3 2^-3), as `torch.finfo(dtype).eps`.
/// Integer precisions count in their own spacing, 1.
pub fn epsilon(dtype: DType) -> f64 {
    if dtype.is_integer() {
        return 1.0;
    }
    2.0 * dtype.unit_roundoff()
}

/// Smallest normal value of a precision's storage: below it rounding is absolute.
fn tiny(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::MIN_POSITIVE,
        DType::F16 => 2f64.powi(-14),
        DType::Fp8E4m3 => 2f64.powi(-6),
        DType::Fp8E5m2 => 2f64.powi(-14),
        DType::F32 | DType::Tf32 | DType::Bf16 => f32::MIN_POSITIVE as f64,
        DType::Int8 | DType::Int8q => 1.0,
    }
}

/// How the result was compared with its reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "ReferenceComparison")]
pub enum Comparison {
    /// Floating-point result against a float64 reference, errors in the dtype's epsilon.
    Rounded,
    /// Integer result against an exact integer reference: any difference is wrong.
    Exact,
}

/// The accuracy set of one benchmark's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Accuracy {
    pub comparison: Comparison,
    /// The precision whose epsilon `max_eps_error` counts in (the benchmark's dtype).
    pub dtype: String,
    /// That epsilon (1 for an exact comparison).
    pub epsilon: f64,
    /// Entries compared.
    pub elements: u64,
    pub max_abs_error: f64,
    pub max_rel_error: f64,
    pub mean_rel_error: f64,
    pub max_eps_error: f64,
    /// Largest error as a fraction of the entry's tolerance (≤ 1 passed the check).
    pub worst_bound_ratio: f64,
    /// What the reference covered: `all of C (512x512)`, or the slice, named.
    pub reference: String,
    /// True when the reference covered a slice of the output, not all of it.
    pub sliced: bool,
}

impl Accuracy {
    /// The exact-match set of an integer result that equalled its reference everywhere.
    pub fn exact(elements: u64, reference: impl Into<String>, sliced: bool) -> Accuracy {
        Accuracy {
            comparison: Comparison::Exact,
            dtype: "integer".into(),
            epsilon: 1.0,
            elements,
            max_abs_error: 0.0,
            max_rel_error: 0.0,
            mean_rel_error: 0.0,
            max_eps_error: 0.0,
            worst_bound_ratio: 0.0,
            reference: reference.into(),
            sliced,
        }
    }

    /// The set of `result` against `reference`, elementwise (each entry's scale is its own
    /// |reference|, and each is allowed `rel_tolerance` of it). The pure form of the meter,
    /// for workloads without a per-entry scale.
    pub fn of(
        reference: &[f64],
        result: &[f64],
        dtype: DType,
        rel_tolerance: f64,
        slice: impl Into<String>,
        sliced: bool,
    ) -> Result<Accuracy, String> {
        if reference.len() != result.len() {
            return Err(format!(
                "result has {} entries, the reference {}",
                result.len(),
                reference.len()
            ));
        }
        let mut meter = AccuracyMeter::new(dtype);
        for (i, (&want, &got)) in reference.iter().zip(result).enumerate() {
            let scale = want.abs();
            meter
                .add(got, want, scale, rel_tolerance * scale.max(tiny(dtype)))
                .map_err(|e| format!("entry {i}: {e}"))?;
        }
        Ok(meter.finish(slice, sliced))
    }

    /// Bits of accuracy this result lost against `baseline`: log2 of the ratio of their
    /// errors in epsilons (2.0: the error grew 4×). Infinite when the baseline was exact
    /// and this is not; 0 when both are exact. `None` when the two were not measured in
    /// the same units (different dtype or comparison).
    pub fn bits_lost_against(&self, baseline: &Accuracy) -> Option<f64> {
        if self.comparison != baseline.comparison || self.dtype != baseline.dtype {
            return None;
        }
        let (b, c) = (baseline.max_eps_error, self.max_eps_error);
        Some(if b == 0.0 && c == 0.0 {
            0.0
        } else if b == 0.0 {
            f64::INFINITY
        } else if c == 0.0 {
            f64::NEG_INFINITY
        } else {
            (c / b).log2()
        })
    }

    /// Adds this set to a benchmark's notes under [`ACCURACY_NOTE`].
    pub fn insert_note(&self, notes: &mut BTreeMap<String, serde_json::Value>) {
        // Only finite numbers are kept (a non-finite error fails the check first), so the
        // set always serialises.
        if let Ok(value) = serde_json::to_value(self) {
            notes.insert(ACCURACY_NOTE.into(), value);
        }
    }

    /// One line for a table cell: `max rel 3.1e-3 · 2.4 ε · mean rel 4.0e-4`, or `exact`.
    pub fn short(&self) -> String {
        match self.comparison {
            Comparison::Exact => "exact".into(),
            Comparison::Rounded => format!(
                "max rel {:.1e} · {} ε · mean rel {:.1e}",
                self.max_rel_error,
                eps_figure(self.max_eps_error),
                self.mean_rel_error
            ),
        }
    }
}

/// An error in epsilons, to two significant figures.
pub fn eps_figure(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Gathers the accuracy set entry by entry, and fails on the first entry past its bound.
#[derive(Clone, Debug)]
pub struct AccuracyMeter {
    comparison: Comparison,
    dtype: String,
    epsilon: f64,
    tiny: f64,
    elements: u64,
    max_abs: f64,
    max_rel: f64,
    sum_rel: f64,
    max_eps: f64,
    worst_ratio: f64,
}

impl AccuracyMeter {
    pub fn new(dtype: DType) -> AccuracyMeter {
        AccuracyMeter {
            comparison: Comparison::Rounded,
            dtype: dtype.id().into(),
            epsilon: epsilon(dtype),
            tiny: tiny(dtype),
            elements: 0,
            max_abs: 0.0,
            max_rel: 0.0,
            sum_rel: 0.0,
            max_eps: 0.0,
            worst_ratio: 0.0,
        }
    }

    /// An exact comparison of integer results: every bound is 0, ε is 1.
    pub fn exact() -> AccuracyMeter {
        AccuracyMeter {
            comparison: Comparison::Exact,
            dtype: "integer".into(),
            epsilon: 1.0,
            tiny: 1.0,
            ..AccuracyMeter::new(DType::F64)
        }
    }

    /// One entry: `got` against `want`, at `scale`, allowed an error of `bound`. Returns
    /// the error as a fraction of the bound, or a message when the entry is wrong (the
    /// caller names where it is). An exact comparison ignores `scale` and `bound`.
    pub fn add(&mut self, got: f64, want: f64, scale: f64, bound: f64) -> Result<f64, String> {
        let error = (got - want).abs();
        if self.comparison == Comparison::Exact {
            self.elements += 1;
            if error != 0.0 {
                return Err(format!(
                    "{got} but the exact reference is {want} (integer results must match)"
                ));
            }
            return Ok(0.0);
        }
        let scale = if scale.is_finite() { scale.abs() } else { 0.0 };
        let ratio = if error == 0.0 { 0.0 } else { error / bound };
        if !error.is_finite() || !ratio.is_finite() || ratio > 1.0 {
            return Err(format!(
                "{got} but the f64 reference is {want} (error {error:.3e} > bound {bound:.3e}, \
                 scale {scale:.3e})"
            ));
        }
        let floor = scale.max(self.tiny);
        let rel = if error == 0.0 {
            0.0
        } else {
            error / want.abs().max(self.epsilon * floor).max(self.tiny)
        };
        self.elements += 1;
        self.max_abs = self.max_abs.max(error);
        self.max_rel = self.max_rel.max(rel);
        self.sum_rel += rel;
        self.max_eps = self.max_eps.max(error / (self.epsilon * floor));
        self.worst_ratio = self.worst_ratio.max(ratio);
        Ok(ratio)
    }

    /// The set, with what the reference covered.
    pub fn finish(self, reference: impl Into<String>, sliced: bool) -> Accuracy {
        Accuracy {
            comparison: self.comparison,
            dtype: self.dtype,
            epsilon: self.epsilon,
            elements: self.elements,
            max_abs_error: self.max_abs,
            max_rel_error: self.max_rel,
            mean_rel_error: if self.elements == 0 {
                0.0
            } else {
                self.sum_rel / self.elements as f64
            },
            max_eps_error: self.max_eps,
            worst_bound_ratio: self.worst_ratio,
            reference: reference.into(),
            sliced,
        }
    }
}

/// Leading rows of a row-major output the reference covers: all `rows` when `bytes_per_row`
/// (its float64 inputs and outputs per row) and `ops_per_row` (multiply-adds per row) fit
/// the budgets with `fixed_bytes` (operands every row needs, e.g. all of B for a GEMM), else
/// as many as fit, at least one.
pub fn reference_rows(
    rows: usize,
    fixed_bytes: u64,
    bytes_per_row: u64,
    ops_per_row: u64,
) -> usize {
    let by_bytes = REFERENCE_BUDGET_BYTES.saturating_sub(fixed_bytes) / bytes_per_row.max(1);
    let by_ops = REFERENCE_BUDGET_OPS / ops_per_row.max(1);
    (rows as u64).min(by_bytes).min(by_ops).max(1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epsilons_are_the_machine_epsilons() {
        assert_eq!(epsilon(DType::F64), f64::EPSILON);
        assert_eq!(epsilon(DType::F32), f32::EPSILON as f64);
        assert_eq!(epsilon(DType::F16), half::f16::EPSILON.to_f64());
        assert_eq!(epsilon(DType::Bf16), half::bf16::EPSILON.to_f64());
        assert_eq!(epsilon(DType::Fp8E4m3), 0.125);
    }

    #[test]
    fn known_errors_give_known_figures() {
        // Errors of 1, 2 and 0 epsilons of f32 at values 1, 4 and 8.
        let eps = f32::EPSILON as f64;
        let reference = [1.0, 4.0, 8.0];
        let result = [1.0 + eps, 4.0 + 2.0 * eps, 8.0];
        let a = Accuracy::of(&reference, &result, DType::F32, 1e-3, "all of x (3)", false).unwrap();
        assert_eq!(a.elements, 3);
        assert_eq!(a.comparison, Comparison::Rounded);
        assert_eq!(a.max_abs_error, 2.0 * eps);
        // Relative: eps/1, 2eps/4, 0 → max eps, mean (eps + eps/2)/3.
        assert!((a.max_rel_error - eps).abs() < 1e-22);
        assert!((a.mean_rel_error - 1.5 * eps / 3.0).abs() < 1e-22);
        // In epsilons at each entry's scale (|reference|): 1, 0.5, 0.
        assert!((a.max_eps_error - 1.0).abs() < 1e-12);
        assert!((a.worst_bound_ratio - eps / 1e-3).abs() < 1e-12);
        assert_eq!(a.reference, "all of x (3)");
        assert!(!a.sliced);
    }

    #[test]
    fn a_per_entry_scale_sets_the_epsilon_units_and_floors_the_relative_error() {
        let mut m = AccuracyMeter::new(DType::Bf16);
        let eps = 2f64.powi(-7);
        // A GEMM entry that cancelled: reference 1e-6 at scale Σ|a·b| = 100, error 0.5.
        m.add(1e-6 + 0.5, 1e-6, 100.0, 10.0).unwrap();
        let a = m.finish("rows 0..1 of C", true);
        // Relative error is measured against ε·scale (0.78), not 1e-6.
        assert!((a.max_rel_error - 0.5 / (eps * 100.0)).abs() < 1e-12);
        assert!((a.max_eps_error - 0.5 / (eps * 100.0)).abs() < 1e-12);
        assert!((a.max_abs_error - 0.5).abs() < 1e-12);
        assert!(a.sliced);
    }

    #[test]
    fn a_wrong_entry_fails_and_zero_against_zero_is_exact() {
        let mut m = AccuracyMeter::new(DType::F32);
        assert_eq!(m.add(0.0, 0.0, 0.0, 0.0).unwrap(), 0.0);
        let err = m.add(2.0, 1.0, 1.0, 1e-6).unwrap_err();
        assert!(err.contains("reference is 1"), "{err}");
        assert!(m.add(f64::NAN, 1.0, 1.0, 1.0).is_err());
        assert!(m.add(f64::INFINITY, 1.0, 1.0, 1.0).is_err());
        let a = m.finish("x", false);
        assert_eq!(
            (a.elements, a.max_abs_error, a.max_rel_error),
            (1, 0.0, 0.0)
        );
        assert!(Accuracy::of(&[1.0], &[1.0, 2.0], DType::F32, 1.0, "x", false).is_err());
    }

    #[test]
    fn integer_results_are_exact_or_wrong() {
        let mut m = AccuracyMeter::exact();
        for v in [0.0, -5.0, 123_456.0] {
            m.add(v, v, 0.0, 0.0).unwrap();
        }
        let a = m.finish("all of C (1x3)", false);
        assert_eq!(a, Accuracy::exact(3, "all of C (1x3)", false));
        assert_eq!(a.short(), "exact");
        assert!(AccuracyMeter::exact().add(1.0, 2.0, 0.0, 1e9).is_err());
        assert_eq!(a.bits_lost_against(&a), Some(0.0));
    }

    #[test]
    fn bits_lost_is_log2_of_the_error_ratio() {
        let at = |eps_err: f64| {
            let mut m = AccuracyMeter::new(DType::Bf16);
            m.add(1.0 + eps_err * epsilon(DType::Bf16), 1.0, 1.0, 1.0)
                .unwrap();
            m.finish("x", false)
        };
        let (base, head) = (at(0.5), at(2.0));
        assert!((head.bits_lost_against(&base).unwrap() - 2.0).abs() < 1e-9);
        assert!((base.bits_lost_against(&head).unwrap() + 2.0).abs() < 1e-9);
        assert_eq!(at(0.5).bits_lost_against(&at(0.0)), Some(f64::INFINITY));
        let mut other = head.clone();
        other.dtype = "f16".into();
        assert_eq!(other.bits_lost_against(&base), None);
    }

    #[test]
    fn the_reference_is_sliced_past_either_budget() {
        // 512 rows of 512 columns and 512 terms: fits.
        assert_eq!(reference_rows(512, 0, 8 * 1024, 512 * 512), 512);
        // Past the ops budget: 2^31 / 2^22 = 512 rows of a 2048³ GEMM.
        assert_eq!(reference_rows(2048, 0, 8 * 4096, 2048 * 2048), 512);
        // Past the memory budget: 1 GiB / 1 MiB per row, minus a fixed 512 MiB.
        assert_eq!(reference_rows(100_000, 1 << 29, 1 << 20, 1), 512);
        // Never zero rows, even when the fixed part alone exceeds the budget.
        assert_eq!(reference_rows(10, 2 << 30, 8, 8), 1);
    }

    #[test]
    fn the_set_round_trips_through_json_and_notes() {
        let a = Accuracy::of(&[2.0], &[2.0 + 1e-7], DType::F32, 1e-3, "all", false).unwrap();
        let mut notes = BTreeMap::new();
        a.insert_note(&mut notes);
        let back: Accuracy = serde_json::from_value(notes[ACCURACY_NOTE].clone()).unwrap();
        assert_eq!(back, a);
        assert!(a.short().starts_with("max rel 5.0e-8"), "{}", a.short());
    }
}
