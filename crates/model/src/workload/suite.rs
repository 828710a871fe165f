//! Which axis values a run covers. Criterion owns argv in `cargo bench`, so stackbench's
//! own knobs are environment variables; `STACKBENCH_SUITE=quick|full` is the main one.

use std::fmt;

/// The environment variable that picks the suite.
pub const SUITE_ENV: &str = "STACKBENCH_SUITE";

/// How much of each axis a run covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Suite {
    /// A few representative points per family: minutes on a laptop, the per-PR default.
    #[default]
    Quick,
    /// Every axis value.
    Full,
}

impl Suite {
    /// Reads `STACKBENCH_SUITE`; unset or empty means quick. Anything else unknown is an
    /// error, so a typo never silently runs the wrong suite.
    pub fn from_env() -> Result<Suite, String> {
        match std::env::var(SUITE_ENV) {
            Ok(value) => Suite::parse(&value),
            Err(std::env::VarError::NotPresent) => Ok(Suite::Quick),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(format!("{SUITE_ENV} is not valid UTF-8"))
            }
        }
    }

    pub fn parse(value: &str) -> Result<Suite, String> {
        match value.trim() {
            "" | "quick" => Ok(Suite::Quick),
            "full" => Ok(Suite::Full),
            other => Err(format!(
                "unknown suite '{other}' in {SUITE_ENV}: expected 'quick' or 'full'"
            )),
        }
    }

    pub fn is_full(self) -> bool {
        self == Suite::Full
    }
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Suite::Quick => "quick",
            Suite::Full => "full",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_suites_and_rejects_typos() {
        assert_eq!(Suite::parse("quick"), Ok(Suite::Quick));
        assert_eq!(Suite::parse(""), Ok(Suite::Quick));
        assert_eq!(Suite::parse(" full\n"), Ok(Suite::Full));
        let err = Suite::parse("fulll").unwrap_err();
        assert!(err.contains("fulll") && err.contains(SUITE_ENV), "{err}");
    }
}
