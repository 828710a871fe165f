//! What each benchmark's telemetry reads as in a view: a figure for every quantity that was
//! read, and "not read" with the reason for every one that was not. The report's run pages
//! (HTML and Markdown) and the dashboard's summary page draw from here, so a CPU run never
//! shows an empty cell where one view says "not read: no RAPL here" and another says
//! nothing. A run with no telemetry at all (recorded before telemetry existed, or on a
//! machine where nothing could be read) is one line, not a column of "not read".

use crate::results::{BenchmarkRecord, RunRecord};
use crate::system::telemetry::{Range, TelemetrySummary};
use crate::units::format_figure;

/// The quantities the sampler reads, in the order views show them.
pub const QUANTITIES: [&str; 5] = [
    "power",
    "temperature",
    "clock",
    "utilisation",
    "energy/iteration",
];

/// One quantity of one benchmark: its figure, or why it was not read.
#[derive(Clone, Debug, PartialEq)]
pub enum Reading {
    Read(String),
    NotRead { reason: String },
}

impl Reading {
    /// The figure, or `not read: <reason>`: what a table cell shows.
    pub fn cell(&self) -> String {
        match self {
            Reading::Read(figure) => figure.clone(),
            Reading::NotRead { reason } => format!("not read: {reason}"),
        }
    }
}

/// One measured benchmark's telemetry, one [`Reading`] per entry of [`QUANTITIES`].
#[derive(Clone, Debug, PartialEq)]
pub struct TelemetryRow {
    pub id: String,
    /// `nvml`, `amdgpu-sysfs`, `rapl`, or empty when no source could be opened.
    pub source: String,
    pub readings: [Reading; 5],
}

impl TelemetryRow {
    /// One line for a text view: the figures read, then the quantities not read grouped
    /// by reason (`power 45.2 W (40.1–50.3) · temperature, clock, utilisation not read:
    /// temperature, clocks and utilisation are not read on CPUs`).
    pub fn line(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut unread: Vec<(String, Vec<&str>)> = Vec::new();
        for (name, reading) in QUANTITIES.iter().zip(&self.readings) {
            match reading {
                Reading::Read(figure) => parts.push(format!("{name} {figure}")),
                Reading::NotRead { reason } => match unread.iter_mut().find(|u| u.0 == *reason) {
                    Some(entry) => entry.1.push(name),
                    None => unread.push((reason.clone(), vec![name])),
                },
            }
        }
        for (reason, names) in unread {
            parts.push(format!("{} not read: {reason}", names.join(", ")));
        }
        parts.join(" · ")
    }

    fn read_anything(&self) -> bool {
        self.readings.iter().any(|r| matches!(r, Reading::Read(_)))
    }
}

/// A run's telemetry as a view shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum RunTelemetry {
    /// No benchmark of the run carries telemetry: an old run, or a plain Criterion run.
    NotRecorded,
    /// Every benchmark carries telemetry and none read anything, for these reasons.
    NothingRead { benchmarks: usize, reason: String },
    /// At least one figure was read: one row per measured benchmark.
    Rows(Vec<TelemetryRow>),
}

impl RunTelemetry {
    /// The one line that stands for the whole run, where rows would only repeat it.
    pub fn one_line(&self) -> Option<String> {
        match self {
            RunTelemetry::NotRecorded => Some(
                "telemetry: not recorded in this run (an old run, or a plain Criterion run)".into(),
            ),
            RunTelemetry::NothingRead { benchmarks, reason } => Some(format!(
                "telemetry: nothing read for any of the {benchmarks} benchmarks (not read: {reason})"
            )),
            RunTelemetry::Rows(_) => None,
        }
    }

    pub fn rows(&self) -> &[TelemetryRow] {
        match self {
            RunTelemetry::Rows(rows) => rows,
            _ => &[],
        }
    }
}

/// The telemetry of every measured benchmark of `run`.
pub fn run_telemetry(run: &RunRecord) -> RunTelemetry {
    if run.benchmarks.iter().all(|b| b.telemetry.is_none()) {
        return RunTelemetry::NotRecorded;
    }
    let rows: Vec<TelemetryRow> = run.benchmarks.iter().map(row).collect();
    if rows.iter().any(TelemetryRow::read_anything) {
        return RunTelemetry::Rows(rows);
    }
    let mut reasons: Vec<String> = Vec::new();
    for r in rows.iter().flat_map(|r| &r.readings) {
        if let Reading::NotRead { reason } = r
            && !reasons.contains(reason)
        {
            reasons.push(reason.clone());
        }
    }
    RunTelemetry::NothingRead {
        benchmarks: rows.len(),
        reason: reasons.join("; "),
    }
}

/// `245 W (230–260)`: the mean, then the range it moved in.
fn range_text(range: &Range, unit: &str) -> String {
    let mean = format_figure(Some(range.mean));
    if range.min == range.max {
        return format!("{mean} {unit}");
    }
    format!(
        "{mean} {unit} ({}–{})",
        format_figure(Some(range.min)),
        format_figure(Some(range.max))
    )
}

/// `0.50 J`, `2.00 mJ`, `310 µJ`: joules per iteration span many orders of magnitude.
fn energy_text(joules: f64) -> String {
    let (scale, unit) = match joules.abs() {
        j if j >= 1.0 || j == 0.0 => (1.0, "J"),
        j if j >= 1e-3 => (1e3, "mJ"),
        j if j >= 1e-6 => (1e6, "µJ"),
        _ => (1e9, "nJ"),
    };
    format!("{} {unit}", format_figure(Some(joules * scale)))
}

fn row(bench: &BenchmarkRecord) -> TelemetryRow {
    let Some(t) = &bench.telemetry else {
        let missing = || Reading::NotRead {
            reason: "not recorded for this benchmark".into(),
        };
        return TelemetryRow {
            id: bench.id.clone(),
            source: String::new(),
            readings: std::array::from_fn(|_| missing()),
        };
    };
    let why = why_not_read(t);
    let quantity = |range: Option<&Range>, unit: &str| match range {
        Some(r) => Reading::Read(range_text(r, unit)),
        None => Reading::NotRead {
            reason: why.clone(),
        },
    };
    let energy = match (t.energy_per_iteration_joules, t.power_watts) {
        (Some(j), _) if j.is_finite() => Reading::Read(energy_text(j)),
        // Energy is power over time: it was not read for the reason power was not.
        (_, None) => Reading::NotRead {
            reason: why.clone(),
        },
        (_, Some(_)) => Reading::NotRead {
            reason: "no time per iteration to spread the power over".into(),
        },
    };
    TelemetryRow {
        id: bench.id.clone(),
        source: t.source.clone(),
        readings: [
            quantity(t.power_watts.as_ref(), "W"),
            quantity(t.temperature_c.as_ref(), "°C"),
            quantity(t.clock_mhz.as_ref(), "MHz"),
            quantity(t.utilization_percent.as_ref(), "%"),
            energy,
        ],
    }
}

/// The sampler's own reasons, or what it means when it gave none: the source was open and
/// returned no value for this quantity.
fn why_not_read(t: &TelemetrySummary) -> String {
    if !t.unavailable.is_empty() {
        return t.unavailable.join("; ");
    }
    match t.source.as_str() {
        "" => "no telemetry source".into(),
        source => format!("{source} gave no reading"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::criterion_output::SampleFile;

    fn bench(id: &str, telemetry: Option<TelemetrySummary>) -> BenchmarkRecord {
        BenchmarkRecord {
            id: id.into(),
            group: "gemm/cuda".into(),
            function: None,
            value: None,
            throughput: None,
            estimates: None,
            samples: SampleFile {
                sampling_mode: None,
                iters: vec![1.0],
                times: vec![10.0],
            },
            notes: Vec::new(),
            telemetry,
            accuracy: None,
        }
    }

    fn run(benchmarks: Vec<BenchmarkRecord>) -> RunRecord {
        RunRecord {
            benchmarks,
            ..RunRecord::new(0, std::path::Path::new("c"), "new", None)
        }
    }

    fn range(min: f64, mean: f64, max: f64) -> Option<Range> {
        Some(Range {
            min,
            mean,
            max,
            samples: 3,
        })
    }

    #[test]
    fn nvml_figures_are_shown_and_a_missing_one_says_why() {
        let nvml = TelemetrySummary {
            source: "nvml".into(),
            power_watts: range(230.0, 245.0, 260.0),
            temperature_c: range(61.0, 61.0, 61.0),
            clock_mhz: range(1980.0, 1980.0, 1980.0),
            utilization_percent: None,
            energy_per_iteration_joules: Some(0.5),
            unavailable: Vec::new(),
        };
        let t = run_telemetry(&run(vec![bench("gemm/cuda/f16/1", Some(nvml))]));
        let rows = t.rows();
        assert_eq!(rows.len(), 1, "{t:?}");
        let cells: Vec<String> = rows[0].readings.iter().map(Reading::cell).collect();
        assert_eq!(
            cells,
            [
                "245 W (230–260)",
                "61.0 °C",
                "1980 MHz",
                "not read: nvml gave no reading",
                "500 mJ"
            ]
        );
        assert!(t.one_line().is_none());
    }

    #[test]
    fn rapl_power_is_shown_and_the_rest_grouped_under_one_reason() {
        let rapl = TelemetrySummary {
            source: "rapl".into(),
            power_watts: range(40.0, 45.0, 50.0),
            energy_per_iteration_joules: Some(0.002),
            unavailable: vec!["temperature, clocks and utilisation are not read on CPUs".into()],
            ..TelemetrySummary::default()
        };
        let t = run_telemetry(&run(vec![bench("gemm/cpu/f32/1", Some(rapl))]));
        assert_eq!(
            t.rows()[0].line(),
            "power 45.0 W (40.0–50.0) · energy/iteration 2.00 mJ · temperature, clock, \
             utilisation not read: temperature, clocks and utilisation are not read on CPUs"
        );
    }

    #[test]
    fn a_run_with_no_telemetry_or_nothing_read_is_one_line() {
        let old = run(vec![bench("a/cpu/f32/1", None), bench("a/cpu/f32/2", None)]);
        assert_eq!(run_telemetry(&old), RunTelemetry::NotRecorded);
        assert!(
            run_telemetry(&old)
                .one_line()
                .unwrap()
                .contains("not recorded")
        );
        let none = || {
            Some(TelemetrySummary {
                source: "rapl".into(),
                unavailable: vec!["no RAPL here".into()],
                ..TelemetrySummary::default()
            })
        };
        let vm = run(vec![
            bench("a/cpu/f32/1", none()),
            bench("a/cpu/f32/2", none()),
        ]);
        let line = run_telemetry(&vm).one_line().unwrap();
        assert!(line.ends_with("(not read: no RAPL here)"), "{line}");
        assert!(line.contains("the 2 benchmarks"), "{line}");
    }
}
