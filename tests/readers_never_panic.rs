//! No input may make a binary panic. One property per reader, each mutating a real file
//! (a byte flipped, the file cut short, a JSON value replaced by a hostile one, a TOML
//! value replaced) and driving the real binary on it where a user meets the reader:
//! - Criterion's `benchmark.json`, `estimates.json`, `sample.json`: `analyze-trends record`
//!   and `compare`;
//! - a run file: `analyze-trends import`, `compare` against the original, `stackbench show`;
//! - the store (`stackbench.db`, damaged or foreign): `analyze-trends runs`, `export`,
//!   `stackbench show`;
//! - `stackbench.toml`: `stackbench suite`, `stackbench show --config`/`--prices`,
//!   `analyze-trends hardware --prices`;
//! - `progress.jsonl` (the live dashboard's file): parsed and every page drawn from it in
//!   the library, since the binary reads it only under a terminal.
//!
//! Each exit code must not be 101 (a panic), and a failure must name the file it concerns.
//! Fixed case counts and seed keep the run bounded and repeatable; a panic found becomes a
//! case in `fixed_regressions` below (and proptest keeps its seed beside this file).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const ANALYZE_TRENDS: &str = env!("CARGO_BIN_EXE_analyze-trends");
const STACKBENCH: &str = env!("CARGO_BIN_EXE_stackbench");
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/criterion-0.8");

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x0005_eed0_0016),
        // Each case runs binaries: shrinking a failure is worth a few hundred of them.
        max_shrink_iters: 256,
        ..Config::default()
    }
}

/// What one binary run left.
struct Ran {
    code: Option<i32>,
    text: String,
}

fn run(bin: &str, args: &[&str], cwd: &Path) -> Ran {
    let out = Command::new(bin)
        .args(args)
        .current_dir(cwd)
        // The user's config must not leak into a test of a mutated one.
        .env_remove("STACKBENCH_CONFIG")
        .output()
        .unwrap_or_else(|e| panic!("could not start {bin}: {e}"));
    Ran {
        code: out.status.code(),
        text: format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// No panic, no signal; a failure (exit 2) names `names` (the file, or a part of its path).
fn assert_handled(ran: &Ran, what: &str, names: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        ran.code.is_some(),
        "{}: killed by a signal\n{}",
        what,
        ran.text
    );
    prop_assert_ne!(ran.code, Some(101), "{}: panicked\n{}", what, ran.text);
    if ran.code == Some(2) {
        prop_assert!(
            ran.text.contains(names),
            "{}: the failure does not name {}\n{}",
            what,
            names,
            ran.text
        );
    }
    Ok(())
}

/// One change to a file.
#[derive(Clone, Debug)]
enum Mutation {
    /// Keep only the first `n` per mille of the bytes.
    Truncate(u16),
    /// Replace the byte at `at` per mille of the length with `byte`.
    Byte(u16, u8),
    /// Replace the JSON value at pre-order position `at` (modulo the count) with `value`.
    Value(usize, Value),
    /// Remove the key at pre-order position `at` from its object.
    DropKey(usize),
    /// Replace the whole file.
    Whole(Vec<u8>),
}

/// Values that have broken readers elsewhere: signs, zeros, huge and tiny numbers, the
/// wrong type, empty and nested containers.
fn hostile_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        prop::sample::select(vec![
            0.0,
            -0.0,
            -1.0,
            1.0,
            -1e300,
            1e300,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            0.5,
            1e-12,
        ])
        .prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        "[a-zA-Z0-9 /_.-]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => (0u16..1000).prop_map(Mutation::Truncate),
        1 => (0u16..1000, any::<u8>()).prop_map(|(at, b)| Mutation::Byte(at, b)),
        4 => (any::<usize>(), hostile_value()).prop_map(|(at, v)| Mutation::Value(at, v)),
        1 => (any::<usize>()).prop_map(Mutation::DropKey),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(Mutation::Whole),
    ]
}

/// Visits every value of `v` in pre-order; `f` gets each and may replace it.
fn nth_value(v: &mut Value, at: &mut usize, f: &mut dyn FnMut(&mut Value)) -> bool {
    if *at == 0 {
        f(v);
        return true;
    }
    *at -= 1;
    let children: Vec<&mut Value> = match v {
        Value::Array(a) => a.iter_mut().collect(),
        Value::Object(o) => o.values_mut().collect(),
        _ => Vec::new(),
    };
    for child in children {
        if nth_value(child, at, f) {
            return true;
        }
    }
    false
}

fn count_values(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count_values).sum(),
        Value::Object(o) => o.values().map(count_values).sum(),
        _ => 0,
    }
}

fn apply(original: &[u8], m: &Mutation) -> Vec<u8> {
    let per_mille = |p: u16| original.len() * usize::from(p) / 1000;
    match m {
        Mutation::Truncate(p) => original[..per_mille(*p)].to_vec(),
        Mutation::Byte(p, b) => {
            let mut out = original.to_vec();
            if !out.is_empty() {
                let i = per_mille(*p).min(out.len() - 1);
                out[i] = *b;
            }
            out
        }
        Mutation::Value(at, value) => {
            let Ok(mut doc) = serde_json::from_slice::<Value>(original) else {
                return original.to_vec();
            };
            let mut at = at % count_values(&doc);
            nth_value(&mut doc, &mut at, &mut |v| *v = value.clone());
            serde_json::to_vec(&doc).unwrap()
        }
        Mutation::DropKey(at) => {
            let Ok(mut doc) = serde_json::from_slice::<Value>(original) else {
                return original.to_vec();
            };
            let mut at = at % count_values(&doc);
            nth_value(&mut doc, &mut at, &mut |v| {
                if let Value::Object(o) = v
                    && let Some(key) = o.keys().next().cloned()
                {
                    o.remove(&key);
                }
            });
            serde_json::to_vec(&doc).unwrap()
        }
        Mutation::Whole(bytes) => bytes.clone(),
    }
}

/// A small Criterion tree: two benchmarks of the fixture, baselines `base` and `new`.
fn criterion_tree(root: &Path) {
    for bench in ["plain function", "gemm_cpu/f32/64x64x64"] {
        for baseline in ["base", "new"] {
            let from = Path::new(FIXTURE).join(bench).join(baseline);
            let to = root.join(bench).join(baseline);
            std::fs::create_dir_all(&to).unwrap();
            for file in ["benchmark.json", "estimates.json", "sample.json"] {
                std::fs::copy(from.join(file), to.join(file)).unwrap();
            }
        }
    }
}

/// Records the Criterion fixture into `results`; the run file's path.
fn recorded_run(results: &Path) -> PathBuf {
    let ran = run(
        ANALYZE_TRENDS,
        &[
            "record",
            "--criterion-dir",
            FIXTURE,
            "--results",
            results.to_str().unwrap(),
        ],
        results.parent().unwrap(),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.text);
    std::fs::read_dir(results.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// Criterion's three files, one mutated in `new`: `record` and `compare base new`.
fn criterion_case(file: &str, m: &Mutation) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("criterion");
    criterion_tree(&tree);
    let target = tree.join("plain function/new").join(file);
    let mutated = apply(&std::fs::read(&target).unwrap(), m);
    std::fs::write(&target, mutated).unwrap();
    let (t, r) = (tree.to_str().unwrap(), tmp.path().join("results"));
    let r = r.to_str().unwrap();
    let record = run(
        ANALYZE_TRENDS,
        &["record", "--criterion-dir", t, "--results", r],
        tmp.path(),
    );
    assert_handled(&record, "record", "criterion")?;
    let compare = run(
        ANALYZE_TRENDS,
        &[
            "compare",
            "base",
            "new",
            "--criterion-dir",
            t,
            "--results",
            r,
        ],
        tmp.path(),
    );
    assert_handled(&compare, "compare", "criterion")
}

/// Shared by the run-file and store cases: one recorded run (made once per process).
fn source_run() -> &'static (tempfile::TempDir, PathBuf) {
    static SOURCE: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    SOURCE.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let file = recorded_run(&tmp.path().join("results"));
        (tmp, file)
    })
}

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn criterion_sample_json_never_panics(m in mutation()) {
        criterion_case("sample.json", &m)?;
    }

    #[test]
    fn criterion_benchmark_json_never_panics(m in mutation()) {
        criterion_case("benchmark.json", &m)?;
    }

    #[test]
    fn criterion_estimates_json_never_panics(m in mutation()) {
        criterion_case("estimates.json", &m)?;
    }

    /// A run file: import it, compare it with the original, show it.
    #[test]
    fn run_json_never_panics(m in mutation()) {
        let (_, original) = source_run();
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("mutated.json");
        std::fs::write(&file, apply(&std::fs::read(original).unwrap(), &m)).unwrap();
        let (f, o) = (file.to_str().unwrap(), original.to_str().unwrap());
        let results = tmp.path().join("results");
        let r = results.to_str().unwrap();
        let import = run(ANALYZE_TRENDS, &["import", f, "--results", r], tmp.path());
        assert_handled(&import, "import", "mutated.json")?;
        if import.code == Some(2) {
            // Refused input leaves no trace.
            prop_assert!(!results.join("stackbench.db").exists(), "{}", import.text);
        }
        let compare = run(ANALYZE_TRENDS, &["compare", o, f, "--results", r], tmp.path());
        assert_handled(&compare, "compare", "mutated.json")?;
        let show = run(
            STACKBENCH,
            &["show", "--page", "all", "--run", f, "--results", r],
            tmp.path(),
        );
        assert_handled(&show, "show", "mutated.json")?;
    }
}

/// A store whose database is damaged: bytes flipped or cut (SQLite's header, its pages).
fn store_case(damage: &dyn Fn(&[u8]) -> Vec<u8>) -> Result<(), TestCaseError> {
    let (source, _) = source_run();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let db = std::fs::read(source.path().join("results/stackbench.db")).unwrap();
    std::fs::write(results.join("stackbench.db"), damage(&db)).unwrap();
    let r = results.to_str().unwrap();
    for (bin, args) in [
        (
            ANALYZE_TRENDS,
            vec!["runs", "--format", "json", "--results", r],
        ),
        (ANALYZE_TRENDS, vec!["export", "--results", r]),
        (STACKBENCH, vec!["show", "--page", "all", "--results", r]),
    ] {
        let ran = run(bin, &args, tmp.path());
        // The database's errors name its path; "no runs" names the store's directory.
        assert_handled(&ran, args[0], r)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn a_damaged_store_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        store_case(&|db: &[u8]| {
            let mut out = db.to_vec();
            for (at, byte) in &edits {
                let i = at.index(out.len());
                out[i] = *byte;
            }
            if let Some(cut) = &cut {
                out.truncate(cut.index(out.len()));
            }
            out
        })?;
    }
}

/// One TOML line's value replaced, or the text cut or flipped.
#[derive(Clone, Debug)]
enum TomlMutation {
    Line(usize, String),
    Text(Mutation),
}

fn toml_mutation() -> impl Strategy<Value = TomlMutation> {
    let values = prop::sample::select(vec![
        "-1",
        "0",
        "nan",
        "inf",
        "-inf",
        "1e999",
        "\"\"",
        "\"day\"",
        "[]",
        "{}",
        "true",
        "'['",
        "\"H100\"",
        "0.0",
        "18446744073709551616",
        "[[1]]",
        "{ a = 1 }",
    ]);
    prop_oneof![
        3 => (any::<usize>(), values).prop_map(|(at, v)| TomlMutation::Line(at, v.to_string())),
        1 => (0u16..1000).prop_map(|p| TomlMutation::Text(Mutation::Truncate(p))),
        1 => (0u16..1000, any::<u8>()).prop_map(|(p, b)| TomlMutation::Text(Mutation::Byte(p, b))),
    ]
}

fn apply_toml(original: &str, m: &TomlMutation) -> Vec<u8> {
    match m {
        TomlMutation::Text(m) => apply(original.as_bytes(), m),
        TomlMutation::Line(at, value) => {
            let lines: Vec<&str> = original.lines().collect();
            let settings: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].contains('=') && !lines[i].trim_start().starts_with('#'))
                .collect();
            let chosen = settings[at % settings.len()];
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            let key = out[chosen].split('=').next().unwrap_or("").to_string();
            out[chosen] = format!("{key}= {value}");
            (out.join("\n") + "\n").into_bytes()
        }
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// The example config, mutated: every reader of stackbench.toml through its command.
    #[test]
    fn stackbench_toml_never_panics(m in toml_mutation()) {
        let (source, _) = source_run();
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("stackbench.example.toml");
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("mutated.toml");
        std::fs::write(&file, apply_toml(&std::fs::read_to_string(example).unwrap(), &m)).unwrap();
        let (f, results) = (file.to_str().unwrap(), source.path().join("results"));
        let r = results.to_str().unwrap();
        for (bin, args) in [
            (STACKBENCH, vec!["suite", "quick", "--config", f]),
            (STACKBENCH, vec!["config", "--get", "results_dir", "--config", f]),
            (STACKBENCH, vec!["show", "--page", "hardware", "--config", f, "--results", r]),
            (STACKBENCH, vec!["show", "--page", "summary", "--prices", f, "--results", r]),
            (ANALYZE_TRENDS, vec!["hardware", "--prices", f, "--results", r]),
        ] {
            let ran = run(bin, &args, tmp.path());
            assert_handled(&ran, args[0], "mutated.toml")?;
        }
    }
}

/// The progress file of a suite as it runs (one JSON event per line), mutated: parsed as
/// the live dashboard parses it, turned into the live run, and every page drawn from it.
fn progress_case(text: &str) {
    use stackbench::dashboard::live::live_run;
    use stackbench::dashboard::{Dashboard, PAGES, text, theme::Theme};
    use stackbench::sidecar::progress::Progress;
    let progress = Progress::parse(text);
    let _ = progress.timing(u64::MAX);
    let _ = progress.timing(0);
    let live = live_run(&progress, None);
    let data = Dashboard::from_runs(vec![live], Vec::new(), 0, None);
    for page in 0..PAGES.len() {
        let _ = text::render_page(&data, page, 100, Theme::plain());
    }
}

const PROGRESS: &str = r#"{"event":"plan","total":3,"suite":"quick","unix_ms":1000}
{"event":"target","target":"gemm","unix_ms":1100}
{"event":"benchmark","id":"gemm/cpu/f32/64x64x64","target":"gemm","outcome":"measured","unix_ms":1200,"samples":{"sampling_mode":"Linear","iters":[1.0,2.0,3.0],"times":[10.0,20.0,30.0]},"throughput":{"Elements":524288}}
{"event":"benchmark","id":"gemm/cpu/f32/128x128x128","target":"gemm","outcome":"failed","reason":"mismatch","unix_ms":1300}
{"event":"benchmark","id":"gemm/cuda/f32/64x64x64","target":"gemm","outcome":"skipped","reason":"no device","unix_ms":1400}
{"event":"done","unix_ms":2000}
"#;

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn progress_jsonl_never_panics(line in 0usize..6, m in mutation()) {
        let mut lines: Vec<String> = PROGRESS.lines().map(String::from).collect();
        let mutated = apply(lines[line].as_bytes(), &m);
        lines[line] = String::from_utf8_lossy(&mutated).replace('\n', " ");
        progress_case(&(lines.join("\n") + "\n"));
    }
}

/// Inputs that panicked once, kept as fixed cases.
#[test]
fn fixed_regressions() {
    // issue 16: a run file whose sample times are negative made `compare` panic (exit 101).
    let (_, original) = source_run();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(original).unwrap()).unwrap();
    for t in doc["benchmarks"][0]["samples"]["times"]
        .as_array_mut()
        .unwrap()
    {
        *t = Value::from(-t.as_f64().unwrap());
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("negative.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let compare = run(
        ANALYZE_TRENDS,
        &[
            "compare",
            original.to_str().unwrap(),
            file.to_str().unwrap(),
            "--results",
            tmp.path().join("r").to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_ne!(compare.code, Some(101), "{}", compare.text);
    assert!(compare.code.is_some(), "{}", compare.text);
    // ... and `compare` itself, on such samples built in memory (no reader in between):
    // the logs of non-positive times broke its sorted samples.
    use stackbench::analysis::{CompareOptions, Side};
    let base = stackbench::results::run_from_criterion(Path::new(FIXTURE), "new", None).unwrap();
    for bad in [-1.0, 0.0, f64::NAN, f64::INFINITY] {
        let mut cand = base.clone();
        for b in &mut cand.benchmarks {
            b.samples.times.iter_mut().for_each(|t| *t *= bad);
        }
        let side = |name: &str, run| Side {
            name: name.into(),
            run,
        };
        let _ = stackbench::analysis::compare(
            &side("base", &base),
            &side("cand", &cand),
            &CompareOptions::default(),
        );
    }
    // A store that is not SQLite at all, and an SQLite file that is not stackbench's.
    store_case(&|_| b"not a database".to_vec()).unwrap();
    store_case(&|_| Vec::new()).unwrap();
}
