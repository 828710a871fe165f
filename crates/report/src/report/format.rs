//! Text helpers of the report writers and the web server's pages (HTML escaping,
//! sparklines). Numbers and units are formatted in [`crate::units`], below both the reports
//! and the dashboard; they are re-exported here so the writers keep one import path.

pub use crate::units::{format_ns, format_percent};

/// Text made safe inside HTML elements and attribute values.
pub fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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
        assert_eq!(sparkline(&[1.0, 2.0, 3.0]), "▁▅█");
        assert_eq!(sparkline(&[2.0, 2.0]), "▄▄");
    }
}
