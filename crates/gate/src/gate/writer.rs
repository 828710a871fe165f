//! How the gate's and bisect's reports are written: their [`ReportWriter`]s, beside the
//! types they write (the writer trait is the reports' floor, below this one).

use super::GateComparison;
use super::bisect::{BisectReport, text};
use crate::report::comparison::COMPARISON_FORMATS;
use crate::report::writer::{Format, ReportWriter, WriteError, json_text};

/// The formats `analyze-trends bisect` prints its report in.
pub const BISECT_FORMATS: &[Format] = &[Format::Table, Format::Json];

impl ReportWriter for BisectReport {
    fn command(&self) -> &'static str {
        "analyze-trends bisect"
    }

    fn formats(&self) -> &'static [Format] {
        BISECT_FORMATS
    }

    /// JSON is bisect.json's content.
    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        Ok(Some(match format {
            Format::Table => text::render(self),
            Format::Json => json_text(self)?,
            _ => return Ok(None),
        }))
    }
}

impl ReportWriter for GateComparison {
    fn command(&self) -> &'static str {
        "analyze-trends gate"
    }

    fn formats(&self) -> &'static [Format] {
        COMPARISON_FORMATS
    }

    /// JSON carries the gate's rounds too; the other formats are the comparison itself,
    /// followed in counting mode by the counts.
    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        Ok(Some(match format {
            Format::Json => json_text(self)?,
            Format::Table | Format::Markdown => {
                let mut text = self.comparison.text(format)?;
                let markdown = format == Format::Markdown;
                if let Some(counting) = &self.counting {
                    text.push_str(&super::counting::render(counting, markdown));
                }
                text.push_str(&super::sampled::render(&self.sampled_functions, markdown));
                text
            }
            _ => return Ok(None),
        }))
    }
}
