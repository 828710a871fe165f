//! The accuracy half of a verdict: each benchmark's error against its float64 reference,
//! baseline beside candidate, judged by the `[accuracy]` rules of `stackbench.toml`.
//!
//! - A rule matches and both sides carry comparable accuracy: `lost` when the candidate
//!   lost more bits (log2 of the growth of its error in epsilons) or grew its largest
//!   relative error by more than the rule allows; else `within`. `lost` fails the verdict
//!   like a slowdown (exit 1), whatever the speed did.
//! - A rule matches and a side has no accuracy (an older run, a failed reference, another
//!   dtype): `unjudged`, which makes the verdict unsure (exit 3), never "accuracy fine".
//! - No rule matches: `not gated`; the figures are shown beside the speed, nothing judged.

use crate::config::AccuracyRules;
use crate::workload::Accuracy;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AccuracyStatus {
    Lost,
    Unjudged,
    Within,
    NotGated,
}

impl AccuracyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AccuracyStatus::Lost => "lost",
            AccuracyStatus::Unjudged => "unjudged",
            AccuracyStatus::Within => "within",
            AccuracyStatus::NotGated => "not gated",
        }
    }
}

/// One benchmark's accuracy, both sides, and what the rules made of it.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccuracyVerdict {
    pub id: String,
    pub status: AccuracyStatus,
    pub baseline: Option<Accuracy>,
    pub candidate: Option<Accuracy>,
    /// log2(candidate / baseline error in epsilons); absent when not comparable, or when
    /// an exact baseline became inexact (then `message` says so).
    pub bits_lost: Option<f64>,
    /// candidate / baseline largest relative error.
    pub rel_error_ratio: Option<f64>,
    /// The `[accuracy]` patterns that applied.
    pub rules: Vec<String>,
    /// The verdict in words, naming the benchmark and the change.
    pub message: String,
}

/// The accuracy verdict of every benchmark that has accuracy on a side or a rule; pairs are
/// (id, baseline accuracy, candidate accuracy).
pub fn judge_accuracy<'a>(
    pairs: impl IntoIterator<Item = (&'a str, Option<&'a Accuracy>, Option<&'a Accuracy>)>,
    rules: &AccuracyRules,
) -> Vec<AccuracyVerdict> {
    pairs
        .into_iter()
        .filter_map(|(id, base, cand)| judge_one(id, base, cand, rules))
        .collect()
}

fn judge_one(
    id: &str,
    base: Option<&Accuracy>,
    cand: Option<&Accuracy>,
    rules: &AccuracyRules,
) -> Option<AccuracyVerdict> {
    let matching: Vec<_> = rules.matching(id).collect();
    if matching.is_empty() && base.is_none() && cand.is_none() {
        return None;
    }
    let bits = match (base, cand) {
        (Some(b), Some(c)) => c.bits_lost_against(b),
        _ => None,
    };
    let ratio = match (base, cand) {
        (Some(b), Some(c)) if bits.is_some() => {
            let (b, c) = (b.max_rel_error, c.max_rel_error);
            Some(if b == 0.0 && c == 0.0 {
                1.0
            } else if b == 0.0 {
                f64::INFINITY
            } else {
                c / b
            })
        }
        _ => None,
    };
    let change = match (bits, ratio) {
        (Some(bits), Some(ratio)) => describe_change(bits, ratio, base, cand),
        _ => String::new(),
    };
    let (status, message) = if matching.is_empty() {
        let m = match bits {
            Some(_) => format!("{id}: accuracy {change} (no [accuracy] rule: not gated)"),
            None => format!(
                "{id}: accuracy {} (no [accuracy] rule: not gated)",
                sides(base, cand)
            ),
        };
        (AccuracyStatus::NotGated, m)
    } else if let (Some(bits), Some(ratio)) = (bits, ratio) {
        let broken: Vec<String> = matching
            .iter()
            .flat_map(|(pattern, rule)| {
                let by_bits = rule
                    .max_bits_lost
                    .filter(|&max| bits > max)
                    .map(|max| format!("more than {max} bit(s) lost (rule \"{pattern}\")"));
                let by_ratio = rule
                    .max_rel_error_increase
                    .filter(|&max| ratio > max)
                    .map(|max| {
                        format!("max relative error grew more than {max}× (rule \"{pattern}\")")
                    });
                by_bits.into_iter().chain(by_ratio)
            })
            .collect();
        if broken.is_empty() {
            (
                AccuracyStatus::Within,
                format!("{id}: accuracy {change}: within the [accuracy] rule"),
            )
        } else {
            (
                AccuracyStatus::Lost,
                format!("{id} LOST ACCURACY: {change}: {}", broken.join("; ")),
            )
        }
    } else {
        (
            AccuracyStatus::Unjudged,
            format!(
                "{id}: accuracy not judged although an [accuracy] rule covers it: {}",
                sides(base, cand)
            ),
        )
    };
    Some(AccuracyVerdict {
        id: id.to_string(),
        status,
        baseline: base.cloned(),
        candidate: cand.cloned(),
        bits_lost: bits.filter(|b| b.is_finite()),
        rel_error_ratio: ratio.filter(|r| r.is_finite()),
        rules: matching.iter().map(|(p, _)| p.to_string()).collect(),
        message,
    })
}

/// Why the two sides cannot be compared.
fn sides(base: Option<&Accuracy>, cand: Option<&Accuracy>) -> String {
    match (base, cand) {
        (None, None) => "no accuracy recorded on either side".into(),
        (None, Some(_)) => "no accuracy recorded in the baseline".into(),
        (Some(_), None) => "no accuracy recorded in the candidate".into(),
        (Some(b), Some(c)) => format!(
            "measured in different units (baseline {} {}, candidate {} {})",
            b.dtype,
            serde_json::to_string(&b.comparison).unwrap_or_default(),
            c.dtype,
            serde_json::to_string(&c.comparison).unwrap_or_default()
        ),
    }
}

/// `3.1 ε → 12 ε (2.0 bits lost), max rel 1.2e-3 → 4.8e-3 (4.0×)`.
fn describe_change(
    bits: f64,
    ratio: f64,
    base: Option<&Accuracy>,
    cand: Option<&Accuracy>,
) -> String {
    use crate::workload::accuracy::eps_figure;
    let (Some(b), Some(c)) = (base, cand) else {
        return String::new();
    };
    let bits_text = if bits == f64::INFINITY {
        "an exact result became inexact".to_string()
    } else if bits >= 0.0 {
        format!("{bits:.1} bits lost")
    } else {
        format!("{:.1} bits gained", -bits)
    };
    let ratio_text = if ratio.is_finite() {
        format!("{ratio:.1}×")
    } else {
        "from zero".into()
    };
    format!(
        "{} ε → {} ε ({bits_text}), max rel {:.1e} → {:.1e} ({ratio_text})",
        eps_figure(b.max_eps_error),
        eps_figure(c.max_eps_error),
        b.max_rel_error,
        c.max_rel_error
    )
}

/// The summary line saying what the accuracy half of a verdict stands on; `None` when no
/// benchmark carried accuracy and no rule applied.
pub fn evidence_note(verdicts: &[AccuracyVerdict]) -> Option<String> {
    if verdicts.is_empty() {
        return None;
    }
    let count = |s: AccuracyStatus| verdicts.iter().filter(|v| v.status == s).count();
    let judged = count(AccuracyStatus::Lost) + count(AccuracyStatus::Within);
    Some(format!(
        "accuracy: {judged} benchmark(s) judged by [accuracy] rules ({} lost accuracy), {} covered by a rule but unjudged (no comparable accuracy on a side), {} shown without a rule",
        count(AccuracyStatus::Lost),
        count(AccuracyStatus::Unjudged),
        count(AccuracyStatus::NotGated)
    ))
}

/// The summary line naming the `[accuracy]` patterns that matched no compared benchmark;
/// `None` when every rule matched one.
pub fn unmatched_note(patterns: &[String]) -> Option<String> {
    if patterns.is_empty() {
        return None;
    }
    let quoted: Vec<String> = patterns.iter().map(|p| format!("\"{p}\"")).collect();
    Some(format!(
        "accuracy: [accuracy] rule(s) {} matched no benchmark compared here and judged nothing",
        quoted.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::DType;
    use crate::workload::accuracy::{AccuracyMeter, epsilon};

    fn at(eps_err: f64) -> Accuracy {
        let mut m = AccuracyMeter::new(DType::Bf16);
        m.add(1.0 + eps_err * epsilon(DType::Bf16), 1.0, 1.0, 1.0)
            .unwrap();
        m.finish("all of C (1x1)", false)
    }

    fn rules(toml: &str) -> AccuracyRules {
        crate::config::Config::parse(toml, std::path::Path::new("t.toml"))
            .unwrap()
            .accuracy_rules()
    }

    /// The verdict says the accuracy was lost, and why.
    fn assert_lost_saying(v: &AccuracyVerdict, why: &str) {
        assert_eq!(v.status, AccuracyStatus::Lost);
        assert!(v.message.contains(why), "{}", v.message);
    }

    #[test]
    fn two_bits_lost_fails_a_one_bit_rule_and_passes_a_three_bit_one() {
        let (base, head) = (at(0.5), at(2.0));
        let one = rules("[accuracy]\n\"gemm/**\" = { max_bits_lost = 1.0 }\n");
        let v = judge_accuracy([("gemm/cpu/bf16/8x8x8", Some(&base), Some(&head))], &one);
        assert_lost_saying(&v[0], "gemm/cpu/bf16/8x8x8 LOST ACCURACY");
        assert!((v[0].bits_lost.unwrap() - 2.0).abs() < 1e-9);
        assert!(v[0].message.contains("2.0 bits lost"), "{}", v[0].message);
        let three = rules("[accuracy]\n\"gemm/**\" = { max_bits_lost = 3.0 }\n");
        let v = judge_accuracy([("gemm/cpu/bf16/8x8x8", Some(&base), Some(&head))], &three);
        assert_eq!(v[0].status, AccuracyStatus::Within);
        // The relative-error limit judges on its own.
        let ratio = rules("[accuracy]\n\"gemm/**\" = { max_rel_error_increase = 2.0 }\n");
        let v = judge_accuracy([("gemm/cpu/bf16/8x8x8", Some(&base), Some(&head))], &ratio);
        assert_lost_saying(&v[0], "grew more than 2×");
    }

    #[test]
    fn a_missing_side_under_a_rule_is_unjudged_and_without_a_rule_only_shown() {
        let r = rules("[accuracy]\n\"gemm/**\" = { max_bits_lost = 1.0 }\n");
        let a = at(1.0);
        let v = judge_accuracy(
            [
                ("gemm/cpu/bf16/1", None, Some(&a)),
                ("gemm/cpu/bf16/2", None, None),
                ("tensor_ops/cpu/add_f32/1", Some(&a), Some(&a)),
                ("memory_bandwidth/cpu/triad/1", None, None),
            ],
            &r,
        );
        assert_eq!(
            v.len(),
            3,
            "a benchmark with no accuracy and no rule is not listed"
        );
        assert_eq!(v[0].status, AccuracyStatus::Unjudged);
        assert!(
            v[0].message
                .contains("no accuracy recorded in the baseline")
        );
        assert_eq!(v[1].status, AccuracyStatus::Unjudged);
        assert_eq!(v[2].status, AccuracyStatus::NotGated);
        let note = evidence_note(&v).unwrap();
        assert!(
            note.contains("0 benchmark(s) judged")
                && note.contains("2 covered by a rule but unjudged"),
            "{note}"
        );
    }

    #[test]
    fn an_exact_result_that_became_inexact_is_lost_under_any_rule() {
        let exact = Accuracy::exact(1, "all of C (1x1)", false);
        let mut inexact = exact.clone();
        inexact.max_eps_error = 1.0;
        inexact.max_abs_error = 1.0;
        inexact.max_rel_error = 0.5;
        let r = rules("[accuracy]\n\"gemm/*/int8/*\" = { max_bits_lost = 8.0 }\n");
        let v = judge_accuracy([("gemm/cpu/int8/4x4x4", Some(&exact), Some(&inexact))], &r);
        assert_lost_saying(&v[0], "an exact result became inexact");
        assert_eq!(v[0].bits_lost, None);
    }
}
