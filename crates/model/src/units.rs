//! Units and the formatting of numbers: the one home both the reports (`report/`) and the
//! dashboard (`dashboard/`) take them from, so a figure reads the same in every view and
//! neither view imports the other to print one.
//!
//! A rate carries its unit as a value ([`RateUnit`]), decided once from the benchmark's
//! throughput kind (`analysis::throughput`). Units never convert into one another: tokens/s
//! stay tokens/s, GB/s stay GB/s, GFLOP/s stay GFLOP/s, and times stay times.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The unit a rate is shown in. Each names what is counted and the scale it is printed at
/// (decimal giga for the ones peak tables use, plain counts for tokens and calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RateUnit {
    /// Floating-point operations, 1e9 per second.
    GflopPerSecond,
    /// Integer operations (int8 GEMM: a multiply and an add per term), 1e12 per second:
    /// TOPS, as datasheets quote INT8. Never mixed with FLOP.
    TopsPerSecond,
    /// Bytes moved, 1e9 per second.
    GbPerSecond,
    /// nccl-tests' bus bandwidth of a collective, 1e9 bytes per second.
    BusGbPerSecond,
    /// Bits, 1e9 per second.
    GbitPerSecond,
    /// Elements of no known kind (a plain Criterion `Elements` throughput), 1e9 per second.
    GelemPerSecond,
    /// Tokens (model inference and training steps), per second.
    TokensPerSecond,
    /// Calls of a benchmark that declared no work per call, per second.
    CallsPerSecond,
}

impl RateUnit {
    pub const ALL: [RateUnit; 8] = [
        RateUnit::GflopPerSecond,
        RateUnit::TopsPerSecond,
        RateUnit::GbPerSecond,
        RateUnit::BusGbPerSecond,
        RateUnit::GbitPerSecond,
        RateUnit::GelemPerSecond,
        RateUnit::TokensPerSecond,
        RateUnit::CallsPerSecond,
    ];

    /// The text printed after the number, and the unit's name in JSON.
    pub fn symbol(self) -> &'static str {
        match self {
            RateUnit::GflopPerSecond => "GFLOP/s",
            RateUnit::TopsPerSecond => "TOPS",
            RateUnit::GbPerSecond => "GB/s",
            RateUnit::BusGbPerSecond => "GB/s busbw",
            RateUnit::GbitPerSecond => "Gbit/s",
            RateUnit::GelemPerSecond => "Gelem/s",
            RateUnit::TokensPerSecond => "tokens/s",
            RateUnit::CallsPerSecond => "calls/s",
        }
    }

    /// How many counted things per second one shown unit stands for.
    pub fn scale(self) -> f64 {
        match self {
            RateUnit::TokensPerSecond | RateUnit::CallsPerSecond => 1.0,
            RateUnit::TopsPerSecond => 1e12,
            _ => 1e9,
        }
    }

    /// A count per second in this unit.
    pub fn from_per_second(self, per_second: f64) -> f64 {
        per_second / self.scale()
    }
}

impl fmt::Display for RateUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

impl Serialize for RateUnit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.symbol())
    }
}

/// Written as its symbol, so its schema is the list of symbols.
impl schemars::JsonSchema for RateUnit {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RateUnit".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let symbols: Vec<&str> = RateUnit::ALL.iter().map(|u| u.symbol()).collect();
        schemars::json_schema!({ "enum": symbols })
    }
}

/// Read back by the symbol it is written as, so a stored rate keeps its unit as a value.
impl<'de> Deserialize<'de> for RateUnit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let symbol = String::deserialize(deserializer)?;
        RateUnit::ALL
            .into_iter()
            .find(|u| u.symbol() == symbol)
            .ok_or_else(|| {
                let known: Vec<&str> = RateUnit::ALL.iter().map(|u| u.symbol()).collect();
                serde::de::Error::invalid_value(
                    serde::de::Unexpected::Str(&symbol),
                    &known.join(", ").as_str(),
                )
            })
    }
}

/// A peak that a measured figure exceeded: a wrong peak (a clock read too low, a table row
/// for another part), kept so a view can say so and name where the peak came from, instead
/// of printing "1384 % of peak" as if it were a fact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SuspectPeak {
    /// The peak in the figure's unit.
    pub peak: f64,
    pub unit: RateUnit,
    /// Where the probe took the peak from (a vendor datasheet, clocks × units, ...).
    pub source: String,
}

impl SuspectPeak {
    /// `peak suspect: above its 167 GFLOP/s peak; peak source: ...`.
    pub fn describe(&self) -> String {
        let source = if self.source.is_empty() {
            "not recorded"
        } else {
            self.source.as_str()
        };
        format!(
            "peak suspect: above its {} {} peak; peak source: {source}",
            format_figure(Some(self.peak)),
            self.unit
        )
    }
}

/// How a figure stands against its peak, for a cell or a bar: `55.1 % of peak`, `peak
/// suspect: ...`, or `n/a of peak` when there is no peak.
pub fn peak_text(percent: Option<f64>, suspect: Option<&SuspectPeak>) -> String {
    match (suspect, percent) {
        (Some(s), _) => s.describe(),
        (None, Some(p)) if p.is_finite() => format!("{p:.1} % of peak"),
        _ => "n/a of peak".into(),
    }
}

/// A figure with three significant figures, or "n/a" (never 0) when there is none.
pub fn format_figure(value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => {
            let magnitude = v.abs();
            if magnitude >= 100.0 {
                format!("{v:.0}")
            } else if magnitude >= 10.0 {
                format!("{v:.1}")
            } else if magnitude >= 0.01 || magnitude == 0.0 {
                format!("{v:.2}")
            } else {
                format!("{v:.3e}")
            }
        }
        _ => "n/a".into(),
    }
}

/// `812 ns`, `12.4 µs`, `3.02 ms`, `1.50 s`.
pub fn format_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "n/a".into();
    }
    let (divisor, unit) = time_unit(ns.abs());
    let value = ns / divisor;
    if value.abs() >= 100.0 {
        format!("{value:.0} {unit}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.2} {unit}")
    }
}

/// A time unit that keeps numbers up to `max_ns` short: (divisor from ns, name).
pub fn time_unit(max_ns: f64) -> (f64, &'static str) {
    match max_ns {
        v if v >= 1e9 => (1e9, "s"),
        v if v >= 1e6 => (1e6, "ms"),
        v if v >= 1e3 => (1e3, "µs"),
        _ => (1.0, "ns"),
    }
}

/// `+7.52 %`, `-0.31 %`, `n/a`.
pub fn format_percent(p: Option<f64>) -> String {
    match p {
        Some(v) if v.is_finite() => format!("{v:+.2} %"),
        _ => "n/a".into(),
    }
}

/// What a size counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeUnit {
    Bytes,
    Elements,
}

impl SizeUnit {
    pub fn axis_title(self) -> &'static str {
        match self {
            SizeUnit::Bytes => "size (bytes, log2)",
            SizeUnit::Elements => "size (elements, log2)",
        }
    }
}

/// `1KiB`, `256MiB`, `3GiB` for bytes; `512`, `4Ki`, `16Mi` for elements; powers of two
/// exactly, other values rounded to one decimal.
pub fn format_size(value: f64, unit: SizeUnit) -> String {
    const STEPS: [(&str, f64); 4] = [
        ("Ti", 1_099_511_627_776.0),
        ("Gi", 1_073_741_824.0),
        ("Mi", 1_048_576.0),
        ("Ki", 1024.0),
    ];
    let suffix = if unit == SizeUnit::Bytes { "B" } else { "" };
    for (prefix, step) in STEPS {
        if value >= step {
            let scaled = value / step;
            return if (scaled - scaled.round()).abs() < 1e-9 {
                format!("{}{prefix}{suffix}", scaled.round())
            } else {
                format!("{scaled:.1}{prefix}{suffix}")
            };
        }
    }
    format!("{}{suffix}", value.round())
}

/// `0`, `2.5`, `120`, `1.2k`: short enough for an axis label.
pub fn format_number(v: f64) -> String {
    let a = v.abs();
    if a >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

const TIME_UNITS: &[(&str, f64)] = &[("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)];

/// A positive, finite number, or why the text is not one.
pub fn parse_positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{text:?} is not a positive number")),
    }
}

/// `200ms`, `1.5s`, `800us`: a positive time in ns (`recommend --slo` and the sweep's
/// per-request SLOs read it).
pub fn parse_latency_ns(text: &str) -> Result<f64, String> {
    // Longest suffix first, so `ms` is not read as `s`.
    let mut units: Vec<&(&str, f64)> = TIME_UNITS.iter().collect();
    units.sort_by_key(|(unit, _)| std::cmp::Reverse(unit.len()));
    let (number, scale) = units
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, *scale)))
        .ok_or_else(|| format!("{text:?} has no time unit (ns, us, ms or s)"))?;
    Ok(parse_positive(number)? * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_percentages() {
        assert_eq!(format_ns(812.0), "812 ns");
        assert_eq!(format_ns(12_400.0), "12.4 µs");
        assert_eq!(format_ns(3_020_000.0), "3.02 ms");
        assert_eq!(format_ns(1.5e9), "1.50 s");
        assert_eq!(format_percent(Some(7.519)), "+7.52 %");
        assert_eq!(format_percent(None), "n/a");
        assert_eq!(time_unit(2e6), (1e6, "ms"));
    }

    #[test]
    fn figures_have_three_significant_figures_and_never_zero_for_missing() {
        assert_eq!(format_figure(Some(123.4)), "123");
        assert_eq!(format_figure(Some(12.34)), "12.3");
        assert_eq!(format_figure(Some(1.234)), "1.23");
        assert_eq!(format_figure(Some(0.0001234)), "1.234e-4");
        assert_eq!(format_figure(None), "n/a");
        assert_eq!(format_figure(Some(f64::NAN)), "n/a");
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(format_size(1024.0, SizeUnit::Bytes), "1KiB");
        assert_eq!(format_size(256.0 * 1048576.0, SizeUnit::Bytes), "256MiB");
        assert_eq!(format_size(4096.0, SizeUnit::Elements), "4Ki");
        assert_eq!(format_size(512.0, SizeUnit::Elements), "512");
        assert_eq!(format_size(1536.0, SizeUnit::Bytes), "1.5KiB");
        assert_eq!(format_number(12_345.0), "12k");
        assert_eq!(format_number(2.5), "2.50");
    }

    #[test]
    fn units_keep_their_own_scale_and_name() {
        // Tokens are counted one by one: 250 000 tokens/s is shown as such, never as
        // 2.5e-4 of a giga unit.
        assert_eq!(
            RateUnit::TokensPerSecond.from_per_second(250_000.0),
            250_000.0
        );
        assert_eq!(RateUnit::GflopPerSecond.from_per_second(2e11), 200.0);
        let names: std::collections::BTreeSet<&str> =
            RateUnit::ALL.iter().map(|u| u.symbol()).collect();
        assert_eq!(
            names.len(),
            RateUnit::ALL.len(),
            "every unit has its own name"
        );
        assert_eq!(
            serde_json::to_value(RateUnit::TokensPerSecond).unwrap(),
            "tokens/s"
        );
    }

    #[test]
    fn a_suspect_peak_is_named_with_its_source_never_as_a_percentage() {
        let suspect = SuspectPeak {
            peak: 167.0,
            unit: RateUnit::GflopPerSecond,
            source: "AVX2: 16 FLOP/cycle x 2 cores x 2600 MHz".into(),
        };
        let text = peak_text(Some(1384.0), Some(&suspect));
        assert!(!text.contains('%'), "{text}");
        assert!(
            text.contains("peak suspect") && text.contains("167 GFLOP/s") && text.contains("AVX2"),
            "{text}"
        );
        assert_eq!(peak_text(Some(55.12), None), "55.1 % of peak");
        assert_eq!(peak_text(None, None), "n/a of peak");
    }
}
