//! The functions that got slower (or faster): for a benchmark the gate found regressed or
//! improved, the functions whose cost per call changed most between the two sides, the
//! gated crate's own functions first. In counting mode the costs are Callgrind's inclusive
//! instructions of each function, read from the files the counts came from
//! ([`crate::harness::measure::callgrind_functions`]); with `--profile perf` in time mode
//! they are perf's sampled shares (`super::profile::sampled`). A reviewer's next question
//! after "which benchmark" is "which function", and both sides' costs are already on disk.

use crate::harness::measure::callgrind_functions::{FunctionCost, FunctionCosts};
use crate::harness::measure::instructions::ITERATIONS_COUNTED;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How many functions a benchmark's list names: enough for a reviewer to start from, short
/// enough for a PR comment.
pub const FUNCTIONS_SHOWN: usize = 5;

/// One function whose inclusive instructions per call changed between base and head.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FunctionChange {
    /// Demangled.
    pub function: String,
    /// Its source file as the debug info names it, where Callgrind knew it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Whether it is the gated crate's own (its file is under the crate's root, or its path
    /// starts with the crate's name).
    #[serde(default)]
    pub own: bool,
    /// Inclusive instructions per call of the benchmark's routine (0: not run on that side).
    pub base_instructions: u64,
    pub head_instructions: u64,
    /// `head − base`.
    pub change_instructions: i64,
    /// `(head − base) / base` in percent; absent when base is 0 (a function only the head
    /// runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_percent: Option<f64>,
    /// Set where the figures are the function's self cost rather than its inclusive one:
    /// Criterion's `Bencher` method, whose own code holds the benchmark's closure where the
    /// compiler inlined it there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// [`FunctionChange::note`] of a wrapping function listed by its self cost.
pub const SELF_COST_NOTE: &str = "self cost only: the benchmark's code inlined into the harness";

/// What decides that a function is the gated crate's own.
#[derive(Clone, Debug, Default)]
pub struct OwnCrate {
    /// The crate's directory: debug info names a workspace member's files relative to the
    /// workspace root (cargo runs rustc there), a path dependency's absolute under it.
    pub root: PathBuf,
    /// The crate's library name (`my-crate` as `my_crate`), the first segment of its paths.
    pub name: Option<String>,
}

impl OwnCrate {
    /// The crate at `crate_dir`, its name read from its `Cargo.toml` where it has one.
    pub fn at(crate_dir: &Path) -> Self {
        #[derive(Deserialize)]
        struct Manifest {
            package: Option<Package>,
        }
        #[derive(Deserialize)]
        struct Package {
            name: String,
        }
        let name = std::fs::read_to_string(crate_dir.join("Cargo.toml"))
            .ok()
            .and_then(|text| toml::from_str::<Manifest>(&text).ok())
            .and_then(|m| m.package)
            .map(|p| p.name.replace('-', "_"));
        OwnCrate {
            root: crate_dir.to_path_buf(),
            name,
        }
    }

    /// Whether `function` (defined in `file`) belongs to the crate: its file is one of the
    /// crate's (absolute under its root, or relative and present there: glibc's debug info
    /// also names relative files, `./csu/../csu/libc-start.c`), or its path starts with the
    /// crate's name (cargo's bench profile has no debug info, so Callgrind's `fl=` of the
    /// crate's own code is `???`).
    pub fn owns(&self, function: &str, file: Option<&str>) -> bool {
        let by_file = file.is_some_and(|f| {
            let path = Path::new(f);
            let inside = path
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            (inside && self.root.join(path).is_file())
                || (path.is_absolute() && path.starts_with(&self.root))
        });
        let by_name = self.name.as_deref().is_some_and(|name| {
            let path = function.trim_start_matches('<');
            path.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with("::"))
        });
        by_file || by_name
    }
}

/// Symbols that name no function of the program: unresolved addresses (`0x…`, or a bare
/// run of hex digits as perf writes them).
pub fn is_address(name: &str) -> bool {
    name.starts_with("0x") || (name.len() >= 8 && name.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The functions whose inclusive instructions per call changed most from `base` to `head`,
/// whose counts' totals are `totals`: the crate's own first, then the largest changes (ties:
/// the function costing less, which is the callee a caller's change comes from). Left out:
/// unchanged functions, unresolved addresses, and the inclusive cost of the functions that
/// wrap the whole count on both sides (at least the total: Criterion's `Bencher` where
/// Callgrind switched collection on, and its callers up to `(below main)`), which changes
/// with any routine. Such a function is listed by its self cost where that changed: a
/// closure the compiler inlined into `Bencher::iter` is counted there and nowhere else.
pub fn counted_changes(
    base: &FunctionCosts,
    head: &FunctionCosts,
    totals: [u64; 2],
    own: &OwnCrate,
) -> Vec<FunctionChange> {
    let names = base
        .keys()
        .chain(head.keys().filter(|k| !base.contains_key(*k)));
    let wraps_all = |name: &String| {
        let inclusive = |costs: &FunctionCosts| costs.get(name).map_or(0, |c| c.inclusive_ir);
        inclusive(base) >= totals[0] && inclusive(head) >= totals[1]
    };
    let mut changes: Vec<FunctionChange> = names
        .filter(|name| !is_address(name))
        .filter_map(|name| {
            let (b, h) = (base.get(name), head.get(name));
            let file = h.or(b).and_then(|c| c.file.clone());
            let (cost, note): (fn(&FunctionCost) -> u64, _) = if wraps_all(name) {
                (|c| c.self_ir, Some(SELF_COST_NOTE.to_owned()))
            } else {
                (|c| c.inclusive_ir, None)
            };
            let per_call = |c: Option<&FunctionCost>| c.map_or(0, |c| cost(c) / ITERATIONS_COUNTED);
            let change = FunctionChange {
                own: note.is_none() && own.owns(name, file.as_deref()),
                function: name.clone(),
                file,
                note,
                ..FunctionChange::between(per_call(b), per_call(h))
            };
            (change.change_instructions != 0).then_some(change)
        })
        .collect();
    changes.sort_by(|a, b| {
        b.own
            .cmp(&a.own)
            .then(
                b.change_instructions
                    .unsigned_abs()
                    .cmp(&a.change_instructions.unsigned_abs()),
            )
            .then(a.base_instructions.cmp(&b.base_instructions))
            .then_with(|| a.function.cmp(&b.function))
    });
    changes.truncate(FUNCTIONS_SHOWN);
    changes
}

impl FunctionChange {
    /// An unnamed change from `base` to `head` instructions per call.
    pub fn between(base: u64, head: u64) -> Self {
        let change = head as i128 - base as i128;
        FunctionChange {
            function: String::new(),
            file: None,
            own: false,
            base_instructions: base,
            head_instructions: head,
            change_instructions: change.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
            change_percent: (base > 0).then(|| change as f64 / base as f64 * 100.0),
            note: None,
        }
    }

    /// The name as lists show it: `(self)` after a function listed by its self cost.
    pub fn shown_name(&self) -> String {
        match self.note {
            Some(_) => format!("{} (self)", self.function),
            None => self.function.clone(),
        }
    }
}

/// `+38 (+5.4 %)`: a change in instructions and, where the base ran it, in percent.
pub fn change_text(change: &FunctionChange) -> String {
    match change.change_percent {
        Some(p) => format!("{:+} ({p:+.1} %)", change.change_instructions),
        None => format!("{:+} (new)", change.change_instructions),
    }
}

/// One benchmark's list, as PR-comment markdown or indented terminal lines.
pub fn render_counted(id: &str, changes: &[FunctionChange], markdown: bool) -> String {
    let mut out = String::new();
    if markdown {
        out.push_str(&format!(
            "\n`{}`: inclusive instructions per call, the crate's own functions first\n\n\
             | function | base | head | change |\n|---|---|---|---|\n",
            id.replace('|', "\\|")
        ));
        for c in changes {
            out.push_str(&format!(
                "| `{}`{} | {} | {} | {} |\n",
                c.shown_name().replace('|', "\\|"),
                if c.own { " (own)" } else { "" },
                c.base_instructions,
                c.head_instructions,
                change_text(c)
            ));
        }
    } else {
        out.push_str(&format!(
            "  {id}: inclusive instructions per call, own functions first\n"
        ));
        for c in changes {
            out.push_str(&format!(
                "    {}{}: {} → {} ({})\n",
                c.shown_name(),
                if c.own { " [own]" } else { "" },
                c.base_instructions,
                c.head_instructions,
                change_text(c)
            ));
        }
    }
    out
}

/// The one line a PR comment can quote: "`<commit>` made `<benchmark>` N % slower:
/// `<function>` +M instructions per call (+P %)".
pub fn headline(
    commit: &str,
    benchmark: &str,
    change_percent: f64,
    top: Option<&FunctionChange>,
) -> String {
    let direction = if change_percent < 0.0 {
        "faster"
    } else {
        "slower"
    };
    let mut line = format!(
        "`{commit}` made `{benchmark}` {:.1} % {direction}",
        change_percent.abs()
    );
    if let Some(f) = top {
        let percent = f
            .change_percent
            .map_or(String::new(), |p| format!(" ({p:+.1} %)"));
        line.push_str(&format!(
            ": `{}` {:+} instructions per call{percent}",
            f.shown_name(),
            f.change_instructions
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    type Row<'a> = (&'a str, &'a str, Option<u64>, Option<u64>);

    /// Both sides' costs from one list of functions.
    fn sides(rows: &[Row<'_>]) -> (FunctionCosts, FunctionCosts) {
        let side = |pick: fn(&Row<'_>) -> Option<u64>| -> FunctionCosts {
            rows.iter()
                .filter_map(|row| {
                    let cost = FunctionCost {
                        file: Some(row.1.to_string()),
                        inclusive_ir: pick(row)?,
                        ..FunctionCost::default()
                    };
                    Some((row.0.to_string(), cost))
                })
                .collect()
        };
        (side(|r| r.2), side(|r| r.3))
    }

    #[test]
    fn own_functions_come_first_then_the_largest_change_then_the_callee() {
        let own = OwnCrate {
            root: PathBuf::from("/work/crate"),
            name: Some("work".into()),
        };
        // (function, file, base inclusive, head inclusive); None: not run on that side.
        let libc = "./csu/../sysdeps/nptl/libc_start_call_main.h";
        let bencher = "/r/criterion/src/bencher.rs";
        let fmt = "/rustc/abc/library/core/src/fmt/mod.rs";
        let (base, head) = sides(&[
            ("(below main)", libc, Some(2000), Some(2076)),
            ("0x000000000001ab70", "???", Some(1000), Some(1038)),
            (
                "criterion::bencher::Bencher<M>::iter",
                bencher,
                Some(1000),
                Some(1038),
            ),
            (
                "work::bench::{{closure}}",
                "benches/work.rs",
                Some(990),
                Some(1028),
            ),
            ("work::encode", "src/lib.rs", Some(900), Some(938)),
            ("work::checksum", "src/lib.rs", Some(700), Some(738)),
            ("core::fmt::write", fmt, Some(50), Some(150)),
            ("memcpy", "???", Some(10), None),
            ("malloc", "???", None, Some(20)),
            ("work::same", "src/lib.rs", Some(5), Some(5)),
        ]);
        let changes = counted_changes(&base, &head, [1000, 1038], &own);
        let names: Vec<&str> = changes.iter().map(|c| c.function.as_str()).collect();
        assert_eq!(
            names,
            [
                "work::checksum",
                "work::encode",
                "work::bench::{{closure}}",
                "core::fmt::write",
                "malloc"
            ]
        );
        let top = &changes[0];
        assert!(top.own);
        assert_eq!((top.base_instructions, top.head_instructions), (700, 738));
        assert_eq!(top.change_instructions, 38);
        assert!((top.change_percent.unwrap() - 38.0 / 7.0).abs() < 1e-9);
        assert!(!changes[3].own);
        assert_eq!(changes[4].change_percent, None, "malloc is new in the head");
        assert_eq!(change_text(&changes[4]), "+20 (new)");
        assert_eq!(
            headline("abc1234", "enc/50", 3.8, changes.first()),
            "`abc1234` made `enc/50` 3.8 % slower: `work::checksum` +38 instructions per call (+5.4 %)"
        );
        assert_eq!(
            headline("abc1234", "enc/50", -2.0, None),
            "`abc1234` made `enc/50` 2.0 % faster"
        );
    }

    #[test]
    fn a_routine_inlined_into_the_harness_is_named_by_the_harness_self_cost() {
        let with_self = |inclusive: u64, self_ir: u64| FunctionCost {
            file: None,
            self_ir,
            inclusive_ir: inclusive,
            calls: 1,
        };
        let bencher = "criterion::bencher::Bencher<M>::iter";
        let base: FunctionCosts = [(bencher.to_owned(), with_self(20_050, 20_000))].into();
        let head: FunctionCosts = [(bencher.to_owned(), with_self(20_450, 20_400))].into();
        let changes = counted_changes(&base, &head, [20_050, 20_450], &OwnCrate::default());
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].note.as_deref(), Some(SELF_COST_NOTE));
        assert_eq!(
            (changes[0].base_instructions, changes[0].change_instructions),
            (20_000, 400)
        );
        assert!(!changes[0].own);
        assert_eq!(
            headline("abc1234", "xor", 2.0, changes.first()),
            format!(
                "`abc1234` made `xor` 2.0 % slower: `{bencher} (self)` +400 instructions per call (+2.0 %)"
            )
        );
    }

    #[test]
    fn a_function_is_own_by_its_file_or_its_crate_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        let own = OwnCrate {
            root: dir.path().to_path_buf(),
            name: Some("base64".into()),
        };
        assert!(own.owns("base64::engine::encode", None));
        assert!(own.owns(
            "<base64::engine::GeneralPurpose as base64::Engine>::encode",
            None
        ));
        assert!(own.owns("anything", Some("src/lib.rs")));
        assert!(own.owns(
            "anything",
            Some(&dir.path().join("src/x.rs").to_string_lossy())
        ));
        assert!(!own.owns("base64x::f", Some("???")));
        assert!(!own.owns("(below main)", Some("./csu/../csu/libc-start.c")));
        assert!(!own.owns("f", Some("src/../../etc/passwd")));
        assert!(!own.owns("f", Some("src/absent.rs")));
        assert!(!own.owns(
            "core::ptr::drop",
            Some("/rustc/x/library/core/src/ptr/mod.rs")
        ));
    }

    #[test]
    fn the_crate_name_comes_from_its_manifest_and_a_missing_one_is_no_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[package]\nname = \"my-crate\"\n",
        )
        .unwrap();
        assert_eq!(OwnCrate::at(dir.path()).name.as_deref(), Some("my_crate"));
        assert_eq!(OwnCrate::at(&dir.path().join("nowhere")).name, None);
    }

    #[test]
    fn a_change_round_trips_and_an_older_one_without_the_optional_fields_loads() {
        let older = r#"{"function":"f","base_instructions":1,"head_instructions":3,"change_instructions":2}"#;
        let change: FunctionChange = serde_json::from_str(older).unwrap();
        assert!(!change.own && change.file.is_none() && change.change_percent.is_none());
        let text = serde_json::to_string(&change).unwrap();
        assert_eq!(
            serde_json::from_str::<FunctionChange>(&text).unwrap(),
            change
        );
    }

    #[test]
    fn the_list_renders_for_the_comment_and_the_terminal() {
        let change = FunctionChange {
            function: "work::a|b".into(),
            own: true,
            ..FunctionChange::between(700, 738)
        };
        let md = render_counted("grp/x", std::slice::from_ref(&change), true);
        assert!(
            md.contains("| `work::a\\|b` (own) | 700 | 738 | +38 (+5.4 %) |"),
            "{md}"
        );
        let text = render_counted("grp/x", &[change], false);
        assert!(
            text.contains("    work::a|b [own]: 700 → 738 (+38 (+5.4 %))"),
            "{text}"
        );
    }
}
