//! `[accuracy]`: how much accuracy a benchmark may lose before a comparison or the gate
//! calls it a regression, per benchmark id pattern. A faster kernel that lost two bits is a
//! finding: speed alone does not clear it.
//!
//! ```toml
//! [accuracy]
//! "gemm/*/bf16/*" = { max_bits_lost = 1.0 }
//! "attention/**" = { max_rel_error_increase = 2.0 }
//! ```
//!
//! Patterns are globs over the full id: `*` matches within one `/`-separated part, `**`
//! across parts. Every rule whose pattern matches applies (the strictest decides).

use regex::Regex;
use serde::Deserialize;
use std::collections::BTreeMap;

/// One pattern's limits; at least one is set.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccuracyRule {
    /// Bits the candidate may lose: log2 of how much its error in epsilons
    /// (`max_eps_error`) grew over the baseline's. 2.0 allows the error to grow 4×.
    pub max_bits_lost: Option<f64>,
    /// Factor the largest relative error (`max_rel_error`) may grow by (2.0: it may double).
    pub max_rel_error_increase: Option<f64>,
}

impl AccuracyRule {
    fn check(&self) -> Result<(), (String, String)> {
        match (self.max_bits_lost, self.max_rel_error_increase) {
            (None, None) => Err((
                "max_bits_lost".into(),
                "give max_bits_lost, max_rel_error_increase or both".into(),
            )),
            (Some(b), _) if !(b.is_finite() && b >= 0.0) => Err((
                "max_bits_lost".into(),
                format!("{b} is not a non-negative number of bits"),
            )),
            (_, Some(f)) if !(f.is_finite() && f >= 1.0) => Err((
                "max_rel_error_increase".into(),
                format!("{f} is not a factor of at least 1"),
            )),
            _ => Ok(()),
        }
    }
}

/// The rules of `[accuracy]`, compiled.
#[derive(Clone, Debug, Default)]
pub struct AccuracyRules {
    rules: Vec<(String, Regex, AccuracyRule)>,
}

impl AccuracyRules {
    /// Compiles the table; an error names the pattern's key.
    pub fn new(table: &BTreeMap<String, AccuracyRule>) -> Result<AccuracyRules, (String, String)> {
        let mut rules = Vec::new();
        for (pattern, rule) in table {
            rule.check()
                .map_err(|(k, m)| (format!("accuracy.\"{pattern}\".{k}"), m))?;
            let regex = glob_regex(pattern).map_err(|m| (format!("accuracy.\"{pattern}\""), m))?;
            rules.push((pattern.clone(), regex, rule.clone()));
        }
        Ok(AccuracyRules { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The patterns that match none of `ids`: rules that judged nothing in a comparison of
    /// those benchmarks (a typo, or ids this machine does not run).
    pub fn unmatched(&self, ids: &[&str]) -> Vec<String> {
        self.rules
            .iter()
            .filter(|(_, re, _)| !ids.iter().any(|id| re.is_match(id)))
            .map(|(p, ..)| p.clone())
            .collect()
    }

    /// The rules that apply to `id`, with their patterns.
    pub fn matching<'a>(
        &'a self,
        id: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a AccuracyRule)> {
        self.rules
            .iter()
            .filter(move |(_, re, _)| re.is_match(id))
            .map(|(p, _, r)| (p.as_str(), r))
    }
}

/// A glob over ids as an anchored regex: `**` any characters, `*` any within one part.
fn glob_regex(pattern: &str) -> Result<Regex, String> {
    if pattern.is_empty() {
        return Err("an empty pattern matches nothing".into());
    }
    let mut re = String::from("^");
    for (i, part) in pattern.split("**").enumerate() {
        if i > 0 {
            re.push_str(".*");
        }
        let pieces: Vec<String> = part.split('*').map(regex::escape).collect();
        re.push_str(&pieces.join("[^/]*"));
    }
    re.push('$');
    Regex::new(&re).map_err(|e| format!("'{pattern}' is not a usable pattern: {e}"))
}

#[cfg(test)]
mod tests {
    use super::{AccuracyRule, AccuracyRules};
    use crate::config::testing::{parsed, refusal};
    use std::collections::BTreeMap;

    #[test]
    fn unmatched_names_the_patterns_that_match_none_of_the_ids() {
        let table: BTreeMap<String, AccuracyRule> = toml::from_str(
            "\"gemm/*/bf16/*\" = { max_bits_lost = 2.0 }\n\"attention/**\" = { max_bits_lost = 1.0 }\n",
        )
        .unwrap();
        let rules = AccuracyRules::new(&table).unwrap();
        assert_eq!(
            rules.unmatched(&["gemm/cuda/bf16/64x64x64", "tensor_ops/cpu/add/1024"]),
            ["attention/**"]
        );
        assert_eq!(
            rules.unmatched(&[]).len(),
            2,
            "no ids: every rule judged nothing"
        );
        assert!(
            AccuracyRules::default()
                .unmatched(&["gemm/cpu/f32/1"])
                .is_empty()
        );
    }

    #[test]
    fn globs_match_by_part_and_rules_need_a_limit() {
        let config = parsed(
            "[accuracy]\n\"gemm/*/bf16/*\" = { max_bits_lost = 2.0 }\n\"attention/**\" = { max_rel_error_increase = 2 }\n",
            "t.toml",
        );
        let rules = config.accuracy_rules();
        let hits = |id: &str| {
            rules
                .matching(id)
                .map(|(p, _)| p.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(hits("gemm/cpu/bf16/512x512x512"), ["gemm/*/bf16/*"]);
        assert!(hits("gemm/cpu/f32/512x512x512").is_empty());
        assert!(hits("gemm/cpu/bf16/512/extra").is_empty());
        assert_eq!(
            hits("attention/cpu/flash_f32/b1_h8_s1024_d64"),
            ["attention/**"]
        );
        for (bad, key) in [
            (
                "[accuracy]\n\"gemm/*\" = {}\n",
                "accuracy.\"gemm/*\".max_bits_lost",
            ),
            (
                "[accuracy]\n\"x\" = { max_bits_lost = -1 }\n",
                "max_bits_lost",
            ),
            (
                "[accuracy]\n\"x\" = { max_rel_error_increase = 0.5 }\n",
                "max_rel_error_increase",
            ),
            ("[accuracy]\n\"x\" = { bits = 1 }\n", "bits"),
        ] {
            let err = refusal(bad, "t.toml");
            assert!(err.contains(key), "{bad}: {err}");
        }
    }
}
