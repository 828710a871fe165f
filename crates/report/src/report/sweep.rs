//! The sweep report's writers (`stackbench sweep-report`), one per format over
//! [`SweepPage`]: Markdown (every chart as a table of the same measured values, the
//! recommendation matrix, the compatibility maps), HTML (the page as `report.html` draws it,
//! scripts inlined, so it opens from a file with no network), JSON (the page model) and PDF
//! (that HTML printed by a real headless Chromium, so the PDF shows the same ECharts
//! charts, not a second drawing of them).

use super::pages::{PageContext, PageModel, SweepPage, bytes_text, render_page};
use crate::report::pages::chart::{Chart, Style, TickFormat};
use crate::report::writer::{Format, ReportWriter, WriteError, json_text, write_text};
use std::io::Write;

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

    /// The PDF is not text: [`ReportWriter::write`] prints it.
    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        Ok(Some(match format {
            Format::Markdown => markdown(self),
            Format::Html => html(self),
            // The page model (schemas/sweep-report.schema.json).
            Format::Json => json_text(self)?,
            _ => return Ok(None),
        }))
    }

    fn write(&self, format: Format, out: &mut dyn Write) -> Result<(), WriteError> {
        match format {
            Format::Pdf => write_pdf(self, out),
            _ => write_text(out, &self.text(format)?),
        }
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
    super::pdf::print_pdf(&html_path, &pdf_path)?;
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
