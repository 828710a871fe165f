//! `report.html`: a self-contained snapshot of the dashboard's pages ([`SnapshotPage`]):
//! the newest run's charts, regressions first, latest-vs-baseline per hardware, every
//! benchmark's history, the runs, the stored comparisons and the hardware matrix, with the
//! chart library and `stackbench.js` inlined so it opens from a file with no network.
//! The same page models and script draw `stackbench serve`'s pages.

use crate::report::pages::{PageContext, PageModel, render_page};

/// The report from a complete snapshot (`PageModel::Snapshot`).
pub fn render(page: &PageModel) -> String {
    render_page(page, &PageContext::snapshot())
}
