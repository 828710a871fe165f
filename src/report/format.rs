//! Number formatting shared by the writers, so a time reads the same in every format.

/// `812 ns`, `12.4 µs`, `3.02 ms`, `1.50 s`.
pub fn format_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "n/a".into();
    }
    let (value, unit) = match ns.abs() {
        v if v < 1e3 => (ns, "ns"),
        v if v < 1e6 => (ns / 1e3, "µs"),
        v if v < 1e9 => (ns / 1e6, "ms"),
        _ => (ns / 1e9, "s"),
    };
    if value.abs() >= 100.0 {
        format!("{value:.0} {unit}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.2} {unit}")
    }
}

/// Text made safe inside HTML elements and attribute values.
pub(crate) fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `+7.52 %`, `-0.31 %`, `n/a`.
pub fn format_percent(p: Option<f64>) -> String {
    match p {
        Some(v) if v.is_finite() => format!("{v:+.2} %"),
        _ => "n/a".into(),
    }
}

/// A Unicode sparkline of `values` (lowest to highest mapped onto eight bars).
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    finite
        .iter()
        .map(|v| {
            let level = if hi > lo {
                ((v - lo) / (hi - lo) * 7.0).round() as usize
            } else {
                3
            };
            BARS[level.min(7)]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(format_ns(812.0), "812 ns");
        assert_eq!(format_ns(12_400.0), "12.4 µs");
        assert_eq!(format_ns(3_020_000.0), "3.02 ms");
        assert_eq!(format_percent(Some(7.519)), "+7.52 %");
        assert_eq!(format_percent(None), "n/a");
        assert_eq!(sparkline(&[1.0, 2.0, 3.0]), "▁▅█");
        assert_eq!(sparkline(&[2.0, 2.0]), "▄▄");
    }
}
