//! The functions that changed most in time mode, from the two `--profile perf` profiles of
//! a regressed or unsure benchmark: `perf report`'s share of samples per symbol, children
//! (the symbol and what it called) and self, on each side. Sampled, not counted: a share
//! moves with sampling noise and with every other symbol's share, so the list says so and
//! never decides anything; it points a reviewer at where to look, as counting mode's list
//! (`super::functions`) does with exact instructions.

use super::functions::{OwnCrate, is_address};
use crate::harness::measure::callgrind_functions::demangled;
use crate::harness::profile::{ProfileOutcome, ProfileRecord, Profiler};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// perf report's field separator here: a byte no symbol name holds.
const SEPARATOR: &str = "\u{1f}";

/// One symbol's shares of a profile's samples, in percent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampledShare {
    pub children_percent: f64,
    pub self_percent: f64,
}

/// One function whose share of the samples changed between the base and head profiles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SampledFunctionChange {
    /// As perf demangled it.
    pub function: String,
    #[serde(default)]
    pub own: bool,
    /// Share of samples in the function and its callees (perf's "children"), per side.
    pub base_children_percent: f64,
    pub head_children_percent: f64,
    /// Share of samples in the function itself (perf's "self"), per side.
    pub base_self_percent: f64,
    pub head_self_percent: f64,
}

impl SampledFunctionChange {
    /// The change in the children share, in percentage points.
    pub fn children_change_points(&self) -> f64 {
        self.head_children_percent - self.base_children_percent
    }
}

/// One profiled benchmark's list (comparison.json's `sampled_functions`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SampledFunctions {
    pub id: String,
    /// Always `perf-samples`: these are sampled shares, not counts.
    pub source: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<SampledFunctionChange>,
    /// Why there is no list (a side's profile is missing or perf report failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// Reads `perf report --stdio --children --sort symbol -g none -F overhead_children,
/// overhead,sym -q -t <SEPARATOR>` output: `children% <sep> self% <sep> [.] symbol <sep>
/// …`. A symbol listed twice (two objects) keeps the larger children share and adds the
/// self shares. A line that is not of that shape is an error naming it.
pub fn parse_perf_report(text: &str) -> Result<BTreeMap<String, SampledShare>, String> {
    let mut shares: BTreeMap<String, SampledShare> = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let bad = |why: &str| format!("perf report line {}: {why}: '{line}'", index + 1);
        let fields: Vec<&str> = line.split(SEPARATOR).collect();
        let [children, self_, symbol, ..] = fields[..] else {
            return Err(bad("fewer than three fields"));
        };
        let percent = |field: &str| {
            field
                .trim()
                .strip_suffix('%')
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|p| p.is_finite())
                .ok_or_else(|| bad("a share is not a percentage"))
        };
        let (children, self_) = (percent(children)?, percent(self_)?);
        let symbol = symbol.trim();
        let name = symbol
            .strip_prefix("[.] ")
            .or_else(|| symbol.strip_prefix("[k] "))
            .ok_or_else(|| bad("the symbol lacks perf's [.] or [k] mark"))?
            .trim();
        let share = shares.entry(without_hash(&demangled(name))).or_default();
        share.children_percent = share.children_percent.max(children);
        share.self_percent += self_;
    }
    Ok(shares)
}

/// `name` without legacy mangling's `::h<16 hex digits>`, which perf's demangler keeps and
/// Callgrind's does not: the two lists name a function alike.
fn without_hash(name: &str) -> String {
    match name.rsplit_once("::h") {
        Some((path, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            path.to_owned()
        }
        _ => name.to_owned(),
    }
}

/// The symbols of the perf profile at `path`, through `perf report`.
pub fn read_profile(path: &Path) -> Result<BTreeMap<String, SampledShare>, String> {
    let output = Command::new("perf")
        .args(["report", "--stdio", "--children", "--sort", "symbol"])
        .args(["-g", "none", "-F", "overhead_children,overhead,sym", "-q"])
        .args(["-t", SEPARATOR, "-i"])
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run perf report on {}: {e}", path.display()))?;
    if !output.status.success() {
        return Err(format!(
            "perf report -i {} failed ({}): {}",
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    parse_perf_report(&String::from_utf8_lossy(&output.stdout))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The functions whose children share changed most: the crate's own first, then the
/// largest change (ties: the smaller share, the callee). Only shares that moved by at least
/// `min_points` points are kept: smaller moves are within what sampling alone does.
pub fn sampled_changes(
    base: &BTreeMap<String, SampledShare>,
    head: &BTreeMap<String, SampledShare>,
    own: &OwnCrate,
    min_points: f64,
) -> Vec<SampledFunctionChange> {
    let names = base
        .keys()
        .chain(head.keys().filter(|k| !base.contains_key(*k)));
    let mut changes: Vec<SampledFunctionChange> = names
        .filter(|name| !is_address(name) && !name.contains("criterion::"))
        .map(|name| {
            let (b, h) = (
                base.get(name).copied().unwrap_or_default(),
                head.get(name).copied().unwrap_or_default(),
            );
            SampledFunctionChange {
                own: own.owns(name, None),
                function: name.clone(),
                base_children_percent: b.children_percent,
                head_children_percent: h.children_percent,
                base_self_percent: b.self_percent,
                head_self_percent: h.self_percent,
            }
        })
        .filter(|c| c.children_change_points().abs() >= min_points)
        .collect();
    changes.sort_by(|a, b| {
        b.own
            .cmp(&a.own)
            .then(
                b.children_change_points()
                    .abs()
                    .total_cmp(&a.children_change_points().abs()),
            )
            .then(a.base_children_percent.total_cmp(&b.base_children_percent))
            .then_with(|| a.function.cmp(&b.function))
    });
    changes.truncate(super::functions::FUNCTIONS_SHOWN);
    changes
}

/// A share moved by less than this (percentage points) is not listed.
pub const MIN_SAMPLED_CHANGE_POINTS: f64 = 1.0;

/// For each id with a written perf profile on both sides, its sampled list; for an id with
/// a perf profile on one side only, or one perf cannot read, why there is none.
pub fn from_profiles(records: &[ProfileRecord], own: &OwnCrate) -> Vec<SampledFunctions> {
    let mut by_id: BTreeMap<&str, [Option<&ProfileRecord>; 2]> = BTreeMap::new();
    for record in records.iter().filter(|r| r.tool == Profiler::Perf) {
        let slot = match record.side.as_deref() {
            Some("base") => 0,
            Some("head") => 1,
            _ => continue,
        };
        by_id.entry(&record.id).or_default()[slot] = Some(record);
    }
    by_id
        .into_iter()
        .map(|(id, sides)| {
            let read = |side: Option<&ProfileRecord>, name: &str| match side.map(|r| &r.outcome) {
                Some(ProfileOutcome::Written { path, .. }) => read_profile(path),
                _ => Err(format!("the {name} side has no perf profile")),
            };
            let lists = read(sides[0], "base").and_then(|b| Ok((b, read(sides[1], "head")?)));
            let (functions, unavailable) = match lists {
                Ok((base, head)) => (
                    sampled_changes(&base, &head, own, MIN_SAMPLED_CHANGE_POINTS),
                    None,
                ),
                Err(why) => (Vec::new(), Some(why)),
            };
            SampledFunctions {
                id: id.to_owned(),
                source: "perf-samples".to_owned(),
                functions,
                unavailable,
            }
        })
        .collect()
}

/// The lists, for the PR comment (`markdown`) or the terminal.
pub fn render(lists: &[SampledFunctions], markdown: bool) -> String {
    if lists.is_empty() {
        return String::new();
    }
    let mut out = if markdown {
        String::from(
            "\n#### Functions that changed most (perf, sampled)\n\nShares of the profile's \
             samples, children (with callees) and self; sampled, so a guide to where to look, \
             not a measurement.\n",
        )
    } else {
        String::from("\nFunctions that changed most (perf, sampled shares of samples):\n")
    };
    for list in lists {
        if let Some(why) = &list.unavailable {
            out.push_str(&format!("\n`{}`: no sampled list: {why}\n", list.id));
            continue;
        }
        if markdown {
            out.push_str(&format!(
                "\n`{}`\n\n| function | children base → head | self base → head |\n|---|---|---|\n",
                list.id.replace('|', "\\|")
            ));
        } else {
            out.push_str(&format!("  {} (sampled)\n", list.id));
        }
        for f in &list.functions {
            let own = if f.own { " (own)" } else { "" };
            let children = format!(
                "{:.1} % → {:.1} % ({:+.1} points)",
                f.base_children_percent,
                f.head_children_percent,
                f.children_change_points()
            );
            let self_ = format!(
                "{:.1} % → {:.1} %",
                f.base_self_percent, f.head_self_percent
            );
            if markdown {
                out.push_str(&format!(
                    "| `{}`{own} | {children} | {self_} |\n",
                    f.function.replace('|', "\\|")
                ));
            } else {
                out.push_str(&format!(
                    "    {}{own}: children {children}, self {self_}\n",
                    f.function
                ));
            }
        }
        if list.functions.is_empty() {
            out.push_str("    no function's share moved by a point or more\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Real `perf report` lines (perf 6.1, this VM), the separator shown as `\x1f`.
    fn report(lines: &[(&str, &str, &str)]) -> String {
        lines
            .iter()
            .map(|(c, s, sym)| {
                format!("{c}  {SEPARATOR}{s}  {SEPARATOR}{sym}      {SEPARATOR}-      -      \n")
            })
            .collect()
    }

    #[test]
    fn perf_report_lines_parse_and_duplicates_merge() {
        let text = report(&[
            ("    20.16%", "19.98%", "[.] _PyEval_EvalFrameDefault"),
            ("     0.05%", " 0.00%", "[.] @plt"),
            ("     0.09%", " 0.05%", "[.] @plt"),
            ("    12.14%", " 0.27%", "[k] do_syscall_64"),
            (
                "    30.00%",
                "29.00%",
                "[.] <probe::Codec as probe::Encode>::encode",
            ),
            (
                "     9.00%",
                " 9.00%",
                "[.] probe::checksum::h0123456789abcdef",
            ),
            (
                "     1.00%",
                " 1.00%",
                "[.] _ZN5probe5other17h0123456789abcdefE",
            ),
        ]);
        let shares = parse_perf_report(&format!("# comment\n\n{text}")).unwrap();
        assert_eq!(shares.len(), 6);
        assert_eq!(shares["probe::checksum"].self_percent, 9.0);
        assert_eq!(shares["probe::other"].self_percent, 1.0);
        assert_eq!(shares["_PyEval_EvalFrameDefault"].children_percent, 20.16);
        let plt = shares["@plt"];
        assert_eq!(plt.children_percent, 0.09);
        assert!((plt.self_percent - 0.05).abs() < 1e-9);
        assert_eq!(shares["do_syscall_64"].self_percent, 0.27);
        assert!(shares.contains_key("<probe::Codec as probe::Encode>::encode"));
    }

    #[test]
    fn malformed_perf_report_lines_are_errors_naming_the_line() {
        for (text, why) in [
            ("garbage\n", "fewer than three fields"),
            ("x%\u{1f}1%\u{1f}[.] f\n", "not a percentage"),
            ("1%\u{1f}1%\u{1f}f\n", "[.] or [k]"),
            ("NaN%\u{1f}1%\u{1f}[.] f\n", "not a percentage"),
        ] {
            let error = parse_perf_report(text).unwrap_err();
            assert!(error.contains("line 1") && error.contains(why), "{error}");
        }
    }

    /// A symbol and its `[children, self]` shares on the base and head sides.
    type ShareRow<'a> = (&'a str, [f64; 2], [f64; 2]);

    #[test]
    fn the_sampled_list_puts_own_functions_first_and_drops_small_moves() {
        // (symbol, [children, self] on base, [children, self] on head), in percent.
        let rows: [ShareRow<'_>; 6] = [
            ("probe::checksum", [20.0, 20.0], [55.0, 55.0]),
            ("probe::encode", [30.0, 5.0], [65.0, 3.0]),
            ("memcpy", [10.0, 10.0], [4.0, 4.0]),
            (
                "criterion::bencher::Bencher<M>::iter",
                [90.0, 1.0],
                [95.0, 1.0],
            ),
            ("0x00007fcfa3656240", [5.0, 0.0], [1.0, 0.0]),
            ("probe::steady", [10.0, 10.0], [10.5, 10.5]),
        ];
        let side = |pick: fn(&ShareRow<'_>) -> [f64; 2]| {
            rows.iter()
                .map(|row| {
                    let [children_percent, self_percent] = pick(row);
                    let share = SampledShare {
                        children_percent,
                        self_percent,
                    };
                    (row.0.to_string(), share)
                })
                .collect::<BTreeMap<_, _>>()
        };
        let (base, head) = (side(|r| r.1), side(|r| r.2));
        let own = OwnCrate {
            root: PathBuf::from("/nowhere"),
            name: Some("probe".into()),
        };
        let changes = sampled_changes(&base, &head, &own, MIN_SAMPLED_CHANGE_POINTS);
        let names: Vec<&str> = changes.iter().map(|c| c.function.as_str()).collect();
        assert_eq!(names, ["probe::checksum", "probe::encode", "memcpy"]);
        assert!(changes[0].own && !changes[2].own);
        assert_eq!(changes[0].children_change_points(), 35.0);
        let list = SampledFunctions {
            id: "encode".into(),
            source: "perf-samples".into(),
            functions: changes,
            unavailable: None,
        };
        let md = render(std::slice::from_ref(&list), true);
        assert!(md.contains("(perf, sampled)"), "{md}");
        assert!(
            md.contains(
                "| `probe::checksum` (own) | 20.0 % → 55.0 % (+35.0 points) | 20.0 % → 55.0 % |"
            ),
            "{md}"
        );
        let text = render(&[list], false);
        assert!(text.contains("encode (sampled)"), "{text}");
    }

    #[test]
    fn a_side_without_a_perf_profile_is_said() {
        let record = ProfileRecord {
            id: "encode".into(),
            tool: Profiler::Perf,
            side: Some("head".into()),
            outcome: ProfileOutcome::Failed {
                error: "perf lacks permission".into(),
            },
        };
        let lists = from_profiles(&[record], &OwnCrate::default());
        assert_eq!(lists.len(), 1);
        let why = lists[0].unavailable.as_deref().unwrap_or_default();
        assert!(why.contains("base side has no perf profile"), "{why}");
    }
}
