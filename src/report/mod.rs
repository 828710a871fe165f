//! Report writers, one per format (terminal, Markdown, HTML, JSON, CSV), over one shared
//! in-memory model of the analysis: [`crate::analysis::Comparison`] for `compare`,
//! [`crate::analysis::trends::TrendReport`] for the history report.

pub mod comparison;
pub(crate) mod format;
pub mod hardware;
pub mod history;
pub mod pages;
pub mod recommend;
pub mod rows;
pub mod sweep;

pub use format::{format_ns, format_percent, sparkline};
