//! A mirror of the part of Criterion's command line that decides which benchmarks run.
//! Criterion keeps its filter private, but the harness must know it before preparing a
//! benchmark (allocating and checking a 4096³ GEMM to then skip it would waste minutes).
//! Unknown flags are tolerated: they can only make the harness prepare more, never less.

use regex::Regex;

/// Criterion's options that take a value (as of 0.5-0.8), so their values are not taken
/// for the filter.
const OPTIONS_WITH_VALUES: &[&str] = &[
    "--color",
    "--save-baseline",
    "--baseline",
    "--baseline-lenient",
    "--format",
    "--profile-time",
    "--load-baseline",
    "--sample-size",
    "--warm-up-time",
    "--measurement-time",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--plotting-backend",
    "--output-format",
];

#[derive(Clone, Debug, Default)]
pub struct CriterionArgs {
    pub filter: Option<String>,
    pub exact: bool,
    pub list: bool,
    pub test: bool,
    pub ignored: bool,
    /// `--profile-time`: Criterion runs the routine for a while with no analysis, as the
    /// profiler's re-run does ([`super::profile`]).
    pub profile: bool,
}

impl CriterionArgs {
    pub fn from_env() -> Self {
        Self::parse(std::env::args().skip(1))
    }

    pub fn parse(args: impl IntoIterator<Item = String>) -> Self {
        let mut parsed = CriterionArgs::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--exact" => parsed.exact = true,
                "--list" => parsed.list = true,
                "--test" => parsed.test = true,
                "--ignored" => parsed.ignored = true,
                "--" => {}
                "--profile-time" => {
                    parsed.profile = true;
                    args.next();
                }
                option if option.starts_with("--profile-time=") => parsed.profile = true,
                option if OPTIONS_WITH_VALUES.contains(&option) => {
                    args.next();
                }
                option if option.starts_with('-') => {}
                filter => {
                    if parsed.filter.is_none() {
                        parsed.filter = Some(filter.to_owned());
                    }
                }
            }
        }
        parsed
    }

    /// Whether Criterion will run the benchmark with this full id. An invalid regex
    /// matches everything here; Criterion itself reports it.
    pub fn matches(&self, id: &str) -> bool {
        if self.ignored {
            return false;
        }
        match &self.filter {
            None => true,
            Some(filter) if self.exact => id == filter,
            Some(filter) => Regex::new(filter).map(|re| re.is_match(id)).unwrap_or(true),
        }
    }
}

#[cfg(test)]
impl CriterionArgs {
    /// A test's command line, written as words (what `parse` gets from the process).
    pub(crate) fn of(words: &[&str]) -> CriterionArgs {
        CriterionArgs::parse(words.iter().map(|s| s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_skips_option_values() {
        let a = CriterionArgs::of(&[
            "--bench",
            "--save-baseline",
            "main",
            "gemm/cpu/f32",
            "--noplot",
        ]);
        assert_eq!(a.filter.as_deref(), Some("gemm/cpu/f32"));
        assert!(a.matches("gemm/cpu/f32/512x512x512"));
        assert!(!a.matches("gemm/cpu/f64/512x512x512"));
        let a = CriterionArgs::of(&["--sample-size=10", "triad"]);
        assert_eq!(a.filter.as_deref(), Some("triad"));
    }

    #[test]
    fn exact_list_and_ignored() {
        let a = CriterionArgs::of(&["--exact", "gemm/cpu/f32/512x512x512"]);
        assert!(a.matches("gemm/cpu/f32/512x512x512"));
        assert!(!a.matches("gemm/cpu/f32/512x512x5120"));
        assert!(CriterionArgs::of(&["--list"]).list);
        assert!(!CriterionArgs::of(&["--ignored"]).matches("anything"));
        assert!(CriterionArgs::of(&[]).matches("anything"));
        let profiled = CriterionArgs::of(&["--bench", "--profile-time", "5", "^a/b$"]);
        assert!(profiled.profile);
        assert_eq!(profiled.filter.as_deref(), Some("^a/b$"));
        assert!(CriterionArgs::of(&["--profile-time=5"]).profile);
        assert!(!CriterionArgs::of(&["--bench"]).profile);
    }
}
