//! `stackbench sweep-report`: the stored model sweeps as a report directory (Markdown, HTML,
//! JSON, PDF) for the SLOs, ranking and models `stackbench recommend` takes. Thin: it reads
//! the store, builds [`SweepPage`], and hands it to the writers of
//! [`crate::report::sweep`].
//!
//! The directory is written whole or not at all: every file goes into a temporary
//! directory beside `--out`, which replaces `--out` only once all of them are written, so a
//! failed PDF (or a full disk) never leaves a report whose formats disagree. Exit 0 written,
//! 2 bad input (no sweep in the store, an unknown model, a bad SLO, Chromium missing while
//! pdf is asked for: then nothing is written).

use crate::cli::recommend::{RequestArgs, load_runs};
use crate::report::pages::SweepPage;
use crate::report::sweep::{self, SWEEP_REPORT_FORMATS};
use crate::report::writer::{Format, ReportWriter};
use anyhow::{Context, bail};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug, Clone)]
#[command(after_help = "Examples:
  stackbench sweep-report --out sweep-report                  # md, html, json
  stackbench sweep-report --out r --format md,html,json,pdf --slo ttft_p99<=200ms
  stackbench sweep-report --out r --rank per-dollar --model gpt2-small

The newest sweep of each machine is shown (as `stackbench recommend` uses it). pdf prints the
HTML with headless Chromium (`chromium`, or STACKBENCH_CHROMIUM); without it, asking for pdf
is an error and nothing is written.")]
pub struct SweepReportArgs {
    /// The report directory (replaced whole once every file is written)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Formats to write (comma-separated; `md` or `markdown`)
    #[arg(
        long,
        value_parser = Format::parser(SWEEP_REPORT_FORMATS),
        value_delimiter = ',',
        default_value = "md,html,json"
    )]
    pub format: Vec<Format>,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub location: crate::cli::store::RunsLocation,
}

/// Runs `stackbench sweep-report`; every error is bad input or the environment (exit 2).
pub fn main(args: SweepReportArgs) -> ExitCode {
    match execute(&args) {
        Ok(written) => {
            for path in written {
                println!("wrote {}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            super::errors::report("stackbench sweep-report", format_args!("{error:#}"));
            ExitCode::from(2)
        }
    }
}

fn execute(args: &SweepReportArgs) -> anyhow::Result<Vec<PathBuf>> {
    let request = args.request.request()?;
    let mut formats = args.format.clone();
    formats.sort();
    formats.dedup();
    if formats.contains(&Format::Pdf) {
        crate::report::pdf::check_chromium()?;
    }
    let (results, runs, prices) = load_runs(&args.location)?;
    let page = SweepPage::of(&runs, &request, prices.as_ref())
        .with_context(|| format!("store of {}", results.display()))?;
    write_report(&page, &formats, &args.out)
}

/// Writes every format into a temporary directory beside `out`, then puts it in place.
fn write_report(page: &SweepPage, formats: &[Format], out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if out.exists() && !out.is_dir() {
        bail!("--out {} exists and is not a directory", out.display());
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".sweep-report-")
        .tempdir_in(&parent)
        .with_context(|| format!("a temporary directory in {}", parent.display()))?;
    for format in formats {
        let path = staging.path().join(sweep::file_name(*format));
        let mut file = std::io::BufWriter::new(
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?,
        );
        page.write(*format, &mut file)
            .and_then(|()| Ok(file.flush()?))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    replace_dir(staging, out)?;
    Ok(formats
        .iter()
        .map(|f| out.join(sweep::file_name(*f)))
        .collect())
}

/// Puts the finished `staging` directory at `out`: an existing `out` is moved aside first
/// and removed only after the new one is in place.
fn replace_dir(staging: tempfile::TempDir, out: &Path) -> anyhow::Result<()> {
    let finished = staging.keep();
    // A temporary directory is private (0700); a report is for reading.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&finished, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("permissions of {}", finished.display()))?;
    }
    let old = out.exists().then(|| {
        let mut name = out.as_os_str().to_owned();
        name.push(format!(".old-{}", std::process::id()));
        PathBuf::from(name)
    });
    if let Some(old) = &old {
        std::fs::rename(out, old)
            .with_context(|| format!("moving the previous {} aside", out.display()))?;
    }
    if let Err(e) = std::fs::rename(&finished, out) {
        // Put the previous report back; the new one stays where it was written.
        if let Some(old) = &old {
            let _ = std::fs::rename(old, out);
        }
        return Err(e)
            .with_context(|| format!("moving {} to {}", finished.display(), out.display()));
    }
    if let Some(old) = old {
        std::fs::remove_dir_all(&old)
            .with_context(|| format!("removing the previous report {}", old.display()))?;
    }
    Ok(())
}
