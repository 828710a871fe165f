//! Cargo's `--message-format=json` messages, as the tools that build bench targets read
//! them: the gate (each side's executables) and `stackbench setup` (the installation cache).

use std::path::PathBuf;

/// A `compiler-artifact` message of a bench target: its name and executable.
pub fn bench_artifact(line: &str) -> Option<(String, PathBuf)> {
    let message: serde_json::Value = serde_json::from_str(line).ok()?;
    if message.get("reason")?.as_str()? != "compiler-artifact" {
        return None;
    }
    let target = message.get("target")?;
    let is_bench = target
        .get("kind")?
        .as_array()?
        .iter()
        .any(|k| k.as_str() == Some("bench"));
    if !is_bench {
        return None;
    }
    let name = target.get("name")?.as_str()?.to_string();
    let exe = PathBuf::from(message.get("executable")?.as_str()?);
    Some((name, exe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bench_executables_are_taken() {
        let bench = r#"{"reason":"compiler-artifact","target":{"kind":["bench"],"name":"gemm"},"executable":"/t/release/deps/gemm-1"}"#;
        let lib = r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"x"},"executable":null}"#;
        assert_eq!(
            bench_artifact(bench),
            Some(("gemm".into(), PathBuf::from("/t/release/deps/gemm-1")))
        );
        assert_eq!(bench_artifact(lib), None);
        let bin = r#"{"reason":"compiler-artifact","target":{"kind":["bin"],"name":"stackbench"},"executable":"/t/release/stackbench"}"#;
        assert_eq!(bench_artifact(bin), None);
        assert_eq!(bench_artifact("not json"), None);
        assert_eq!(bench_artifact(r#"{"reason":"build-finished"}"#), None);
    }
}
