//! `--profile TOOL` of the gate (and so of every bisect step): once the verdict is known,
//! each benchmark that regressed or stayed unsure is run again under the profiler on both
//! sides, while their worktrees and executables still exist, and the profiles are written
//! under `<out>/profiles/<side>/`, linked from comparison.json and the PR comment. The
//! verdict was taken before: a profile that fails is listed with its reason and changes no
//! exit code.

use super::rounds::{Collected, SideRun};
use crate::analysis::{Comparison, Status};
use crate::harness::profile::{
    PROFILES_DIR, ProfileJob, ProfileOutcome, ProfileRecord, ProfileSettings, file_stems, profile,
};
use std::collections::BTreeMap;
use std::path::Path;

/// The ids worth a profile: those the gate found degraded or could not decide.
pub fn ids_to_profile(comparison: &Comparison) -> Vec<String> {
    comparison
        .comparisons
        .iter()
        .filter(|row| matches!(row.status, Status::Degraded | Status::Inconclusive))
        .map(|row| row.id.clone())
        .collect()
}

/// Profiles `ids` on both sides (base first). `target_of` names each id's bench target; an
/// id whose target or executable is unknown on a side gets a failed profile saying so.
pub fn profile_sides(
    settings: ProfileSettings,
    sides: &[&SideRun; 2],
    ids: &[String],
    target_of: &BTreeMap<String, String>,
    out: &Path,
) -> Vec<ProfileRecord> {
    if ids.is_empty() {
        return Vec::new();
    }
    eprintln!(
        "analyze-trends gate: profiling {} regressed or unsure benchmark(s) under {} on both sides ({} s each)",
        ids.len(),
        settings.tool,
        settings.seconds
    );
    let stems = file_stems(ids);
    let mut records = Vec::new();
    for side in sides {
        let dir = out.join(PROFILES_DIR).join(side.name);
        for (id, stem) in ids.iter().zip(&stems) {
            let exe = target_of
                .get(id)
                .and_then(|target| side.executables.get(target));
            let Some(exe) = exe else {
                records.push(ProfileRecord {
                    id: id.clone(),
                    tool: settings.tool,
                    side: Some(side.name.to_owned()),
                    outcome: ProfileOutcome::Failed {
                        error: format!(
                            "no bench executable of the {} side is known to hold it",
                            side.name
                        ),
                    },
                });
                continue;
            };
            records.push(profile(&ProfileJob {
                tool: settings.tool,
                bench_exe: exe,
                id,
                seconds: settings.seconds,
                dir: &dir,
                stem,
                cwd: Some(&side.crate_dir),
                env: &side.env,
                search_path: None,
                side: Some(side.name),
            }));
        }
    }
    records
}

/// Each id's bench target: the timed rounds', then counting mode's.
pub fn targets(
    collected: &Collected,
    counted: Option<&super::counting::Counted>,
) -> BTreeMap<String, String> {
    let mut map = collected.target_of.clone();
    if let Some(counted) = counted {
        for row in &counted.report.benchmarks {
            map.entry(row.id.clone())
                .or_insert_with(|| row.target.clone());
        }
    }
    map
}

/// The PR comment's section: each profile as a path inside the gate's output folder (the
/// workflow's artifact), or why there is none.
pub fn markdown(records: &[ProfileRecord], out: &Path) -> String {
    if records.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "\n#### Profiles\n\nThe regressed and unsure benchmarks, run again under the profiler \
         after the verdict (paths inside the gate's output folder):\n\n",
    );
    for record in records {
        let side = record.side.as_deref().unwrap_or("");
        let line = match &record.outcome {
            ProfileOutcome::Written { path, bytes, .. } => {
                // Profiles are written at absolute paths; `--out` may be relative.
                let out = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
                let shown = path.strip_prefix(&out).unwrap_or(path);
                format!(
                    "[`{}`]({}) ({} KiB)",
                    shown.display(),
                    shown.display(),
                    bytes.div_ceil(1024)
                )
            }
            ProfileOutcome::Unavailable { reason } => format!("unavailable: {reason}"),
            ProfileOutcome::Failed { error } => {
                format!("failed: {}", error.lines().next().unwrap_or(""))
            }
        };
        text.push_str(&format!(
            "- `{}` {side}, {}: {line}\n",
            record.id, record.tool
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::profile::Profiler;
    use std::path::PathBuf;

    #[test]
    fn the_comment_links_written_profiles_and_says_why_others_are_missing() {
        let out = Path::new("/tmp/gate-out");
        let records = [
            ProfileRecord {
                id: "sum/1000".into(),
                tool: Profiler::Perf,
                side: Some("head".into()),
                outcome: ProfileOutcome::Written {
                    path: PathBuf::from("/tmp/gate-out/profiles/head/sum_1000.perf.data"),
                    bytes: 2048,
                    command: vec!["perf".into()],
                },
            },
            ProfileRecord {
                id: "sum/1000".into(),
                tool: Profiler::Perf,
                side: Some("base".into()),
                outcome: ProfileOutcome::Failed {
                    error: "perf lacks permission: kernel.perf_event_paranoid is 3\nmore".into(),
                },
            },
        ];
        let text = markdown(&records, out);
        assert!(
            text.contains(
                "[`profiles/head/sum_1000.perf.data`](profiles/head/sum_1000.perf.data) (2 KiB)"
            ),
            "{text}"
        );
        assert!(
            text.contains("`sum/1000` base, perf: failed: perf lacks permission: kernel.perf_event_paranoid is 3\n"),
            "{text}"
        );
        assert_eq!(markdown(&[], out), "");
    }
}
