//! One self-contained HTML page (no scripts, no external files): the same three tables.

use super::{
    DEVICE_HEADERS, FIGURE_HEADERS, RECOMMENDATION_HEADERS, device_rows, figure_rows, legend,
    recommendation_rows,
};
use crate::analysis::hardware::HardwareReport;
use crate::report::format::escape_html as escape;

pub fn render(report: &HardwareReport) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Cross-hardware report</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#eee}</style></head><body>\n",
    );
    out.push_str(&format!(
        "<h1>Cross-hardware report</h1>\n<p>{}</p>\n",
        escape(&legend(report))
    ));
    out.push_str("<h2>Recommendation matrix</h2>\n");
    out.push_str(&table(
        &RECOMMENDATION_HEADERS,
        &recommendation_rows(report),
    ));
    out.push_str("<h2>Figures by workload</h2>\n");
    out.push_str(&table(&FIGURE_HEADERS, &figure_rows(report)));
    out.push_str("<h2>Devices and the API each was measured through</h2>\n");
    out.push_str(&table(&DEVICE_HEADERS, &device_rows(report)));
    out.push_str("</body></html>\n");
    out
}

fn table<const N: usize>(headers: &[&str; N], rows: &[[String; N]]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for h in headers {
        out.push_str(&format!("<th>{}</th>", escape(h)));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            out.push_str(&format!("<td>{}</td>", escape(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}
