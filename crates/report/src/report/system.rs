//! `stackbench info`: the system probe as a report, through the one [`ReportWriter`].

use crate::probe::SystemProbe;
use crate::report::writer::{Format, ReportWriter, WriteError, json_text};

/// The formats `stackbench info` prints the probe in.
pub const INFO_FORMATS: &[Format] = &[Format::Table, Format::Json];

impl ReportWriter for SystemProbe {
    fn command(&self) -> &'static str {
        "stackbench info"
    }

    fn formats(&self) -> &'static [Format] {
        INFO_FORMATS
    }

    /// JSON is schema stackbench.system.v1, what the analyzer reads.
    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        Ok(Some(match format {
            Format::Table => self.to_text(),
            Format::Json => json_text(self)?,
            _ => return Ok(None),
        }))
    }
}
