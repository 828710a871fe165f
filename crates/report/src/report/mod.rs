//! Report writers, one per format (terminal, Markdown, HTML, JSON, CSV, PDF), over one shared
//! in-memory model of the analysis: [`crate::analysis::Comparison`] for `compare`,
//! [`crate::analysis::trends::TrendReport`] for the history report. Every report is written
//! through the one [`ReportWriter`] trait in the one [`Format`] vocabulary.

pub mod comparison;
pub mod format;
pub mod hardware;
pub mod history;
pub mod pages;
pub mod pdf;
pub mod recommend;
pub mod rows;
pub mod sweep;
pub mod system;
pub mod writer;

pub use format::{format_ns, format_percent, sparkline};
pub use writer::{Format, ReportWriter, WriteError};
