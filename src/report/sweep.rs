//! The sweep report's writers (`stackbench sweep-report`), one per format over
//! [`SweepPage`]: Markdown (every chart as a table of the same measured values, the
//! recommendation matrix, the compatibility maps), HTML (the page as `report.html` draws it,
//! scripts inlined, so it opens from a file with no network), JSON (the page model) and PDF
//! (that HTML printed by a real headless Chromium, so the PDF shows the same ECharts
//! charts, not a second drawing of them).

use super::pages::{PageContext, PageModel, SweepPage, bytes_text, render_page};
use crate::report::pages::chart::{Chart, Style, TickFormat};
use crate::report::writer::{Format, ReportWriter, WriteError, write_text};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The formats `stackbench sweep-report --format` writes.
pub const SWEEP_REPORT_FORMATS: &[Format] =
    &[Format::Markdown, Format::Html, Format::Json, Format::Pdf];

/// The file a format is written to inside the output directory: `sweep-report.md`, ...
pub fn file_name(format: Format) -> String {
    format!("sweep-report.{}", format.extension())
}

impl ReportWriter for SweepPage {
    fn command(&self) -> &'static str {
        "stackbench sweep-report"
    }

    fn formats(&self) -> &'static [Format] {
        SWEEP_REPORT_FORMATS
    }

    fn write(&self, format: Format, out: &mut dyn Write) -> Result<(), WriteError> {
        let text = match format {
            Format::Markdown => markdown(self),
            Format::Html => html(self),
            Format::Json => json(self)?,
            Format::Pdf => return write_pdf(self, out),
            other => return Err(self.not_offered(other)),
        };
        write_text(out, &text)
    }
}

/// The PDF is printed from the HTML file by Chromium, so both go through a directory of
/// their own that is gone once the PDF's bytes are written.
fn write_pdf(page: &SweepPage, out: &mut dyn Write) -> Result<(), WriteError> {
    let dir = tempfile::tempdir()?;
    let html_path = dir.path().join(file_name(Format::Html));
    let pdf_path = dir.path().join(file_name(Format::Pdf));
    std::fs::write(&html_path, html(page)).map_err(|source| WriteError::File {
        path: html_path.clone(),
        source,
    })?;
    print_pdf(&html_path, &pdf_path)?;
    let pdf = std::fs::read(&pdf_path).map_err(|source| WriteError::File {
        path: pdf_path.clone(),
        source,
    })?;
    Ok(out.write_all(&pdf)?)
}

/// The page as one self-contained HTML document.
pub fn html(page: &SweepPage) -> String {
    render_page(
        &PageModel::Sweep(Box::new(page.clone())),
        &PageContext::snapshot(),
    )
}

/// The page model as pretty JSON (schemas/sweep-report.schema.json).
pub fn json(page: &SweepPage) -> Result<String, serde_json::Error> {
    Ok(serde_json::to_string_pretty(page)? + "\n")
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn md_table(out: &mut String, headers: &[String], rows: &[Vec<String>]) {
    let line = |cells: &[String]| {
        format!(
            "| {} |\n",
            cells
                .iter()
                .map(|c| cell(c))
                .collect::<Vec<_>>()
                .join(" | ")
        )
    };
    out.push_str(&line(headers));
    out.push_str(&format!("|{}\n", "---|".repeat(headers.len())));
    for row in rows {
        out.push_str(&line(row));
    }
    out.push('\n');
}

/// A value as the chart's y axis counts it.
fn value_text(chart: &Chart, y: f64) -> String {
    match chart.y.ticks {
        TickFormat::Bytes => bytes_text(y),
        _ => format!("{y:.1}"),
    }
}

/// A chart as the table of what it draws: bars as one row per category and one column per
/// series, lines as one row per series and one column per x; an unmeasured slot says so.
pub fn chart_table(chart: &Chart) -> (Vec<String>, Vec<Vec<String>>) {
    let bars = chart.series.iter().any(|s| s.style == Style::Bar);
    if bars {
        let mut headers = vec![chart.y.title.clone()];
        headers.extend(chart.series.iter().map(|s| s.name.clone()));
        let rows = chart
            .y
            .categories
            .iter()
            .enumerate()
            .map(|(slot, category)| {
                let mut row = vec![category.clone()];
                row.extend(chart.series.iter().map(|s| {
                    s.points
                        .iter()
                        .find(|p| p.x == slot as f64 && p.y.is_some())
                        .map_or("no data".into(), |p| p.text.clone())
                }));
                row
            })
            .collect();
        return (headers, rows);
    }
    let mut xs: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let mut headers = vec![format!("{} \\ {}", chart.y.title, chart.x.title)];
    headers.extend(xs.iter().map(|x| format!("{x}")));
    let rows = chart
        .series
        .iter()
        .map(|s| {
            let mut row = vec![s.name.clone()];
            row.extend(xs.iter().map(|&x| {
                s.points
                    .iter()
                    .find(|p| p.x == x)
                    .and_then(|p| p.y)
                    .map_or("not measured".into(), |y| value_text(chart, y))
            }));
            row
        })
        .collect();
    (headers, rows)
}

fn md_chart(out: &mut String, chart: &Chart) {
    out.push_str(&format!("#### {}\n\n", chart.title));
    if chart.is_empty() {
        out.push_str(&format!("Not measured ({}).\n\n", chart.note));
        return;
    }
    let (headers, rows) = chart_table(chart);
    md_table(out, &headers, &rows);
}

/// The report as Markdown: the matrix, then every chart as a table, then the maps.
pub fn markdown(page: &SweepPage) -> String {
    let rec = &page.recommendation;
    let slos = crate::report::recommend::slo_text(rec);
    let mut out = format!(
        "# Model sweep report\n\nThe newest sweep of each machine; SLO: {slos}; rank: {}. \
         Only measured cells: nothing is interpolated across batch, sequence length or hardware.\n\n",
        rec.rank
    );
    out.push_str("## Machines\n\n");
    let machines: Vec<Vec<String>> = page
        .hardware
        .iter()
        .map(|h| {
            vec![
                h.device.clone(),
                h.fingerprint.clone(),
                h.run_id.clone(),
                h.timestamp.clone(),
                format!("{} / {} / {}", h.measured, h.failed, h.skipped),
            ]
        })
        .collect();
    let headers = [
        "device",
        "fingerprint",
        "run",
        "time",
        "measured / failed / skipped",
    ];
    md_table(&mut out, &headers.map(String::from), &machines);
    out.push_str("## Recommendation matrix\n\n");
    let mut headers = vec!["model".to_string(), "phase".to_string()];
    headers.extend(page.matrix_columns.iter().cloned());
    headers.push("best".into());
    let rows: Vec<Vec<String>> = page
        .matrix
        .iter()
        .map(|r| {
            let mut row = vec![r.model.clone(), r.phase.clone()];
            row.extend(r.cells.iter().map(|c| c.text.clone()));
            row.push(r.pick.text.clone());
            row
        })
        .collect();
    md_table(&mut out, &headers, &rows);
    if !page.basis.is_empty() {
        for line in &page.basis {
            out.push_str(&format!("- {line}\n"));
        }
        out.push('\n');
    }
    for (title, charts) in [
        ("Hardware comparison", &page.hardware_charts),
        ("Throughput by batch size", &page.batch_charts),
        ("Peak memory by sequence length", &page.memory_charts),
    ] {
        out.push_str(&format!("## {title}\n\n"));
        if charts.is_empty() {
            out.push_str("No workload to show.\n\n");
        }
        for chart in charts {
            md_chart(&mut out, chart);
        }
    }
    out.push_str("## Compatibility maps\n\n");
    for h in &page.hardware {
        out.push_str(&format!(
            "### {} ({}), run {}\n\n",
            h.device, h.fingerprint, h.run_id
        ));
        let rows: Vec<Vec<String>> = h
            .compatibility
            .iter()
            .map(|c| vec![c.outcome.to_string(), c.id.clone(), c.detail.clone()])
            .collect();
        md_table(
            &mut out,
            &["outcome", "cell", "detail"].map(String::from),
            &rows,
        );
    }
    out
}

/// How long Chromium may take to print: generous, since it lays out every chart and the
/// machine may be busy; a hung browser is killed after it.
const PRINT_TIMEOUT: Duration = Duration::from_secs(180);
/// The virtual time the page gets before printing: its scripts draw every chart at load,
/// with animation off, so this is far more than enough.
const VIRTUAL_TIME_BUDGET_MS: u32 = 10_000;

/// Why the PDF could not be printed.
#[derive(Debug, thiserror::Error)]
pub enum PdfError {
    #[error(
        "the PDF is printed by headless Chromium, and `{binary}` could not be run ({reason}); \
         install chromium (or set STACKBENCH_CHROMIUM to its path), or leave pdf out of --format"
    )]
    NoChromium { binary: String, reason: String },
    #[error("`{binary}` printing {html} failed: {detail}")]
    Print {
        binary: String,
        html: PathBuf,
        detail: String,
    },
}

/// The Chromium binary: `STACKBENCH_CHROMIUM` when set, else `chromium` on the PATH.
pub fn chromium_binary() -> String {
    std::env::var("STACKBENCH_CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

/// Checks that Chromium runs at all, so a report asked for as PDF fails before anything
/// is written.
pub fn check_chromium() -> Result<String, PdfError> {
    let binary = chromium_binary();
    match Command::new(&binary).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(binary),
        Ok(out) => Err(PdfError::NoChromium {
            binary,
            reason: format!("--version exited with {}", out.status),
        }),
        Err(e) => Err(PdfError::NoChromium {
            binary,
            reason: e.to_string(),
        }),
    }
}

/// How stackbench starts headless Chromium anywhere (the PDF here, the browser tests):
/// no sandbox (it runs as root in CI), no GPU, no first-run or extension work, and no
/// background networking, whose connections a closed network refuses many at a time.
pub const HEADLESS_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
];

/// Prints `html` (a file) to `pdf` with headless Chromium: a throwaway profile, no
/// background networking (the page fetches nothing), no header or footer.
pub fn print_pdf(html: &Path, pdf: &Path) -> Result<(), PdfError> {
    let binary = check_chromium()?;
    let failed = |detail: String| PdfError::Print {
        binary: binary.clone(),
        html: html.to_path_buf(),
        detail,
    };
    let profile = tempfile::tempdir().map_err(|e| failed(format!("a profile directory: {e}")))?;
    let mut child = Command::new(&binary)
        .args(HEADLESS_FLAGS)
        .args([
            "--disable-component-update",
            "--disable-sync",
            "--no-pdf-header-footer",
            "--run-all-compositor-stages-before-draw",
        ])
        .arg(format!("--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}"))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(format!("file://{}", html.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    // Drain stderr on its own thread: Chromium logs freely and must never block on a full pipe.
    let stderr = child.stderr.take();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = stderr {
            let _ = std::io::Read::read_to_string(&mut pipe, &mut text);
        }
        text
    });
    let deadline = Instant::now() + PRINT_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!(
                    "no PDF after {} s (killed)",
                    PRINT_TIMEOUT.as_secs()
                )));
            }
            Err(e) => return Err(failed(e.to_string())),
        }
    };
    let log = log.join().unwrap_or_default();
    let head = std::fs::read(pdf)
        .map(|bytes| bytes.starts_with(b"%PDF"))
        .unwrap_or(false);
    if !status.success() || !head {
        let tail: String = log.lines().rev().take(5).collect::<Vec<_>>().join(" / ");
        return Err(failed(format!(
            "exit {status}, {}; {tail}",
            if head {
                "a PDF written"
            } else {
                "no PDF written"
            }
        )));
    }
    Ok(())
}
