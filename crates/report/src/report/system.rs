//! `stackbench info`: the system probe as a report, through the one [`ReportWriter`].

use crate::probe::SystemProbe;
use crate::report::writer::{Format, ReportWriter, WriteError, write_text};
use std::io::Write;

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
    fn write(&self, format: Format, out: &mut dyn Write) -> Result<(), WriteError> {
        let text = match format {
            Format::Table => self.to_text(),
            Format::Json => serde_json::to_string_pretty(self)? + "\n",
            other => return Err(self.not_offered(other)),
        };
        write_text(out, &text)
    }
}
