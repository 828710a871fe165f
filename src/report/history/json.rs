//! `report.json`: the trend model as it is.

use crate::analysis::trends::TrendReport;

pub fn render(report: &TrendReport) -> String {
    // Plain data with finite numbers; NaN becomes null through serde_json.
    let mut text =
        serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}
