//! How the gate's and bisect's reports are written: their [`ReportWriter`]s, beside the
//! types they write (the writer trait is the reports' floor, below this one).

use super::GateComparison;
use super::bisect::{BisectReport, text};
use crate::report::comparison::COMPARISON_FORMATS;
use crate::report::writer::{Format, ReportWriter, WriteError, write_text};
use std::io::Write;

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
    fn write(&self, format: Format, out: &mut dyn Write) -> Result<(), WriteError> {
        let text = match format {
            Format::Table => text::render(self),
            Format::Json => serde_json::to_string_pretty(self)? + "\n",
            other => return Err(self.not_offered(other)),
        };
        write_text(out, &text)
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
    fn write(&self, format: Format, out: &mut dyn Write) -> Result<(), WriteError> {
        match format {
            Format::Json => write_text(out, &(serde_json::to_string_pretty(self)? + "\n")),
            Format::Table | Format::Markdown => {
                self.comparison.write(format, out)?;
                let markdown = format == Format::Markdown;
                if let Some(counting) = &self.counting {
                    write_text(out, &super::counting::render(counting, markdown))?;
                }
                write_text(
                    out,
                    &super::sampled::render(&self.sampled_functions, markdown),
                )
            }
            other => Err(self.not_offered(other)),
        }
    }
}
