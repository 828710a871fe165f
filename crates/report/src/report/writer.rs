//! The one vocabulary of report formats and the one trait every report writer implements,
//! as hyperfine's `Exporter`: each command that prints a report takes `--format` through
//! [`Format::parser`], so `md` and `markdown` (and every other name) mean the same thing to
//! every command, and each report model implements [`ReportWriter`], so a format a report
//! does not offer is one clear error naming the command and what it does offer, never a
//! different format written instead.

use clap::ValueEnum;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use std::ffi::OsStr;
use std::io::Write;

/// Every format a report is written in. The order is the order help lists them in and the
/// order a command that writes several (sweep-report) writes and names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum Format {
    /// Aligned text for a terminal
    Table,
    /// GitHub-flavoured Markdown (for a PR comment or a report file)
    #[value(alias = "md")]
    Markdown,
    /// One self-contained HTML file
    Html,
    /// JSON for scripts (each report's own schema)
    Json,
    /// Comma-separated rows for spreadsheets
    Csv,
    /// The HTML printed by headless Chromium
    Pdf,
}

impl Format {
    /// Every format, in [`Format`]'s order.
    pub const ALL: &'static [Format] = &[
        Format::Table,
        Format::Markdown,
        Format::Html,
        Format::Json,
        Format::Csv,
        Format::Pdf,
    ];

    /// The name `--format` takes and errors print.
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Markdown => "markdown",
            Format::Html => "html",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Pdf => "pdf",
        }
    }

    /// The file extension of a report written in this format.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Table => "txt",
            Format::Markdown => "md",
            Format::Html => "html",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Pdf => "pdf",
        }
    }

    /// The `--format` parser of a command whose report is written in `offered`: every
    /// spelling of every format is understood, help lists only `offered`, and a format the
    /// command does not write is refused while parsing (exit 2), before any work is done.
    pub fn parser(offered: &'static [Format]) -> FormatParser {
        FormatParser { offered }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `table, markdown, json`: the formats as a list for messages.
fn list(formats: &[Format]) -> String {
    formats
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// See [`Format::parser`].
#[derive(Clone, Copy, Debug)]
pub struct FormatParser {
    offered: &'static [Format],
}

impl TypedValueParser for FormatParser {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<Format, clap::Error> {
        let known = value
            .to_str()
            .and_then(|text| Format::from_str(text, false).ok());
        match known {
            Some(format) if self.offered.contains(&format) => Ok(format),
            Some(format) => {
                let command = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
                let error = WriteError::NotOffered {
                    command: command.to_string(),
                    format,
                    offered: self.offered,
                };
                Err(
                    clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{error}\n"))
                        .with_cmd(cmd),
                )
            }
            // Not a format at all: clap's own message, listing what this command offers.
            None => {
                let names = self.offered.iter().filter_map(|f| f.to_possible_value());
                Err(
                    match PossibleValuesParser::new(names).parse_ref(cmd, arg, value) {
                        Err(error) => error,
                        // Every offered name is a format, so this cannot be taken; it is refused
                        // rather than read as some format.
                        Ok(_) => {
                            clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd)
                        }
                    },
                )
            }
        }
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            self.offered.iter().filter_map(|f| f.to_possible_value()),
        ))
    }
}

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{command} does not write {format}; its formats: {}", list(offered))]
    NotOffered {
        command: String,
        format: Format,
        offered: &'static [Format],
    },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A file a writer needs on the way (the HTML the PDF is printed from).
    #[error("{}: {source}", path.display())]
    File {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot serialise the report as JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot write the report as CSV: {0}")]
    Csv(#[from] csv::Error),
    #[error(transparent)]
    Pdf(#[from] crate::report::pdf::PdfError),
}

/// A report's in-memory model, written in any of the formats it offers. One implementation
/// per report; each format's text comes from that report's own writer module. A writer
/// states only its command, its formats and each format's text ([`ReportWriter::render`]):
/// refusing a format it does not offer, and writing the text out, are done here once.
pub trait ReportWriter {
    /// The command that prints the report, as errors name it: `analyze-trends compare`.
    fn command(&self) -> &'static str;

    /// The formats the report is written in; the command's `--format` offers exactly these.
    fn formats(&self) -> &'static [Format];

    /// The report's text in `format`, or `None` where it has none: a format outside
    /// [`ReportWriter::formats`], or one whose bytes are not text (a PDF), which the
    /// report's own [`ReportWriter::write`] prints.
    fn render(&self, format: Format) -> Result<Option<String>, WriteError>;

    /// The report's text in `format`; a format outside [`ReportWriter::formats`], or one
    /// it has no text in, is [`WriteError::NotOffered`].
    fn text(&self, format: Format) -> Result<String, WriteError> {
        if !self.formats().contains(&format) {
            return Err(self.not_offered(format));
        }
        self.render(format)?.ok_or_else(|| self.not_offered(format))
    }

    /// Writes the report in `format`; a format outside [`ReportWriter::formats`] is
    /// [`WriteError::NotOffered`], and nothing is written.
    fn write(&self, format: Format, out: &mut dyn Write) -> Result<(), WriteError> {
        write_text(out, &self.text(format)?)
    }

    /// The error for a format this report does not offer.
    fn not_offered(&self, format: Format) -> WriteError {
        WriteError::NotOffered {
            command: self.command().to_string(),
            format,
            offered: self.formats(),
        }
    }

    /// The report in `format`, in memory.
    fn to_bytes(&self, format: Format) -> Result<Vec<u8>, WriteError> {
        let mut out = Vec::new();
        self.write(format, &mut out)?;
        Ok(out)
    }
}

/// Writes a report its writer rendered as text.
pub fn write_text(out: &mut dyn Write, text: &str) -> Result<(), WriteError> {
    Ok(out.write_all(text.as_bytes())?)
}

/// A report's model as pretty JSON with a final newline: the `json` format of every report
/// whose JSON is its model whole.
pub fn json_text<T: serde::Serialize + ?Sized>(model: &T) -> Result<String, WriteError> {
    Ok(serde_json::to_string_pretty(model)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    #[command(name = "demo")]
    struct Demo {
        #[arg(long, value_parser = Format::parser(&[Format::Table, Format::Markdown]), default_value_t = Format::Table)]
        format: Format,
    }

    fn parse(value: &str) -> Result<Format, String> {
        Demo::try_parse_from(["demo", "--format", value])
            .map(|d| d.format)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn both_spellings_of_markdown_parse_to_one_format() {
        assert_eq!(parse("md"), Ok(Format::Markdown));
        assert_eq!(parse("markdown"), Ok(Format::Markdown));
        assert_eq!(parse("table"), Ok(Format::Table));
    }

    #[test]
    fn a_format_not_offered_names_the_command_and_its_formats() {
        let error = parse("pdf").unwrap_err();
        assert!(
            error.contains("demo does not write pdf; its formats: table, markdown"),
            "{error}"
        );
        let error = parse("xml").unwrap_err();
        assert!(
            error.contains("table, markdown") && !error.contains("pdf"),
            "{error}"
        );
    }

    #[test]
    fn every_format_has_one_name_that_parses_back() {
        for format in Format::ALL {
            assert_eq!(Format::from_str(format.name(), false), Ok(*format));
            assert_eq!(format.to_string(), format.name());
        }
        assert_eq!(Format::value_variants(), Format::ALL);
    }
}
