//! One precedence for every setting a command takes from more than one place:
//! a flag, else an environment variable, else the config file, else the default. The
//! resolved value remembers where it came from, so an error about it names the flag, the
//! variable or the file's key that set it (README, "Configuration").

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Where a resolved setting came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A command-line flag, e.g. `--rounds`.
    Flag(&'static str),
    /// An environment variable, e.g. `STACKBENCH_GATE_ROUNDS`.
    Env(&'static str),
    /// A key of the config file, e.g. `[gate] rounds` in `stackbench.toml`.
    File { key: &'static str, path: PathBuf },
    /// The built-in default.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag(flag) => write!(f, "{flag}"),
            Source::Env(var) => write!(f, "${var}"),
            Source::File { key, path } => write!(f, "{key} in {}", path.display()),
            Source::Default => write!(f, "the default"),
        }
    }
}

/// A setting's value and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved<T> {
    pub value: T,
    pub source: Source,
}

impl<T: fmt::Display> fmt::Display for Resolved<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (from {})", self.value, self.source)
    }
}

/// An environment variable that is set but does not parse.
#[derive(Debug, thiserror::Error)]
#[error("${var} = `{value}` is not valid: {reason}")]
pub struct EnvError {
    pub var: &'static str,
    pub value: String,
    pub reason: String,
}

/// What one setting is called in each place it can come from.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    pub flag: &'static str,
    pub env: &'static str,
    /// The key as a user writes it in the file, e.g. `[gate] rounds`.
    pub file_key: &'static str,
}

/// Flag > environment > file > default. `file` is asked only when neither the flag nor the
/// environment set the value, so a command given every flag never depends on the file;
/// it yields the file's value (None when the file says nothing) and the file's path.
pub fn resolve<T, E>(
    setting: Setting,
    flag: Option<T>,
    file: impl FnOnce() -> Result<Option<(T, PathBuf)>, E>,
    default: T,
) -> Result<Resolved<T>, E>
where
    T: FromStr,
    T::Err: fmt::Display,
    E: From<EnvError>,
{
    if let Some(value) = flag {
        return Ok(Resolved {
            value,
            source: Source::Flag(setting.flag),
        });
    }
    if let Some(text) = std::env::var_os(setting.env).filter(|v| !v.is_empty()) {
        let text = text.to_string_lossy().into_owned();
        let value = text.trim().parse::<T>().map_err(|e| EnvError {
            var: setting.env,
            value: text.clone(),
            reason: e.to_string(),
        })?;
        return Ok(Resolved {
            value,
            source: Source::Env(setting.env),
        });
    }
    if let Some((value, path)) = file()? {
        return Ok(Resolved {
            value,
            source: Source::File {
                key: setting.file_key,
                path,
            },
        });
    }
    Ok(Resolved {
        value: default,
        source: Source::Default,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTING: Setting = Setting {
        flag: "--answer",
        env: "STACKBENCH_TEST_PRECEDENCE_UNSET_VARIABLE",
        file_key: "[test] answer",
    };

    fn file(v: Option<u32>) -> impl FnOnce() -> Result<Option<(u32, PathBuf)>, EnvError> {
        move || Ok(v.map(|v| (v, PathBuf::from("s.toml"))))
    }

    #[test]
    fn flag_beats_file_beats_default() {
        let flag = resolve(SETTING, Some(1), file(Some(2)), 3).unwrap();
        assert_eq!(flag.value, 1);
        assert_eq!(flag.source.to_string(), "--answer");
        let from_file = resolve(SETTING, None, file(Some(2)), 3).unwrap();
        assert_eq!(from_file.value, 2);
        assert_eq!(from_file.source.to_string(), "[test] answer in s.toml");
        let default = resolve(SETTING, None, file(None), 3).unwrap();
        assert_eq!((default.value, default.source), (3, Source::Default));
    }

    #[test]
    fn the_file_is_not_read_when_a_flag_decides() {
        let never = || -> Result<Option<(u32, PathBuf)>, EnvError> { panic!("file read") };
        assert_eq!(resolve(SETTING, Some(7), never, 3).unwrap().value, 7);
    }
}
