//! Markdown: three pipe tables (recommendations, figures, devices), for a job summary or a pull-request comment.

use super::{
    DEVICE_HEADERS, FIGURE_HEADERS, RECOMMENDATION_HEADERS, device_rows, figure_rows, legend,
    recommendation_rows,
};
use crate::analysis::hardware::HardwareReport;

pub fn render(report: &HardwareReport) -> String {
    let mut out = format!("# Cross-hardware report\n\n{}\n\n", legend(report));
    out.push_str("## Recommendation matrix\n\n");
    out.push_str(&table(
        &RECOMMENDATION_HEADERS,
        &recommendation_rows(report),
    ));
    out.push_str("\n## Figures by workload\n\n");
    out.push_str(&table(&FIGURE_HEADERS, &figure_rows(report)));
    out.push_str("\n## Devices and the API each was measured through\n\n");
    out.push_str(&table(&DEVICE_HEADERS, &device_rows(report)));
    out
}

fn table<const N: usize>(headers: &[&str; N], rows: &[[String; N]]) -> String {
    let escape = |s: &str| s.replace('|', "\\|");
    let mut out = format!("| {} |\n", headers.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(N)));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}
