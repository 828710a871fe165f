//! The terminal table: aligned columns, figures first, then the recommendation matrix.

use super::{
    DEVICE_HEADERS, FIGURE_HEADERS, RECOMMENDATION_HEADERS, device_rows, figure_rows, legend,
    recommendation_rows,
};
use crate::analysis::hardware::HardwareReport;

pub fn render(report: &HardwareReport) -> String {
    let mut out = String::from("Cross-hardware report\n");
    out.push_str(&legend(report));
    out.push_str("\n\n");
    out.push_str(&aligned(&FIGURE_HEADERS, &figure_rows(report)));
    out.push_str("\nRecommendation matrix\n");
    out.push_str(&aligned(
        &RECOMMENDATION_HEADERS,
        &recommendation_rows(report),
    ));
    out.push_str("\nDevices and the API each was measured through\n");
    out.push_str(&aligned(&DEVICE_HEADERS, &device_rows(report)));
    out
}

fn aligned<const N: usize>(headers: &[&str; N], rows: &[[String; N]]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}
