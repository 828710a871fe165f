//! Flat rows as a terminal table, JSON or CSV: the one writer behind every store listing
//! (`runs`, `history`, `comparisons`, `prune`) and `export`. Rows are serialised once through `csv`, so
//! the table's columns are the struct's fields, in order, with the same names as the CSV.

use crate::report::writer::{Format, ReportWriter, WriteError, json_text};
use serde::Serialize;

/// The formats every store listing writes.
pub const ROW_FORMATS: &[Format] = &[Format::Table, Format::Json, Format::Csv];

/// A listing as one report: the command that prints it, the formats it offers and its rows.
pub struct Rows<'a, T> {
    pub command: &'static str,
    pub formats: &'static [Format],
    pub rows: &'a [T],
}

impl<'a, T: Serialize> Rows<'a, T> {
    /// A store listing, offered in every one of [`ROW_FORMATS`].
    pub fn listing(command: &'static str, rows: &'a [T]) -> Self {
        Rows {
            command,
            formats: ROW_FORMATS,
            rows,
        }
    }

    /// The listing in `format`, with `footer` under the table (a summary of the rows that
    /// people read and scripts reading CSV do not want); `None` for a format it does not
    /// offer.
    pub fn with_footer(
        &self,
        format: Format,
        footer: String,
    ) -> Result<Option<String>, WriteError> {
        let mut text = self.render(format)?;
        if let Some(table) = text.as_mut().filter(|_| format == Format::Table) {
            table.push_str(&footer);
        }
        Ok(text)
    }
}

impl<T: Serialize> ReportWriter for Rows<'_, T> {
    fn command(&self) -> &'static str {
        self.command
    }

    fn formats(&self) -> &'static [Format] {
        self.formats
    }

    /// A table of no rows says so instead of printing a header.
    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        if !self.formats.contains(&format) {
            return Ok(None);
        }
        Ok(Some(match format {
            Format::Json => json_text(self.rows)?,
            Format::Csv => csv_text(self.rows)?,
            Format::Table if self.rows.is_empty() => "(none)\n".into(),
            Format::Table => {
                let csv = csv_text(self.rows)?;
                let mut reader = csv::ReaderBuilder::new()
                    .has_headers(false)
                    .from_reader(csv.as_bytes());
                let cells: Vec<Vec<String>> = reader
                    .records()
                    .map(|r| r.map(|r| r.iter().map(String::from).collect()))
                    .collect::<Result<_, _>>()?;
                table(&cells)
            }
            _ => return Ok(None),
        }))
    }
}

/// The rows as CSV, a header of the struct's field names first.
pub(crate) fn csv_text<T: Serialize>(rows: &[T]) -> Result<String, WriteError> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row)?;
    }
    let bytes = writer.into_inner().map_err(|e| e.into_error())?;
    // Serialised Rust strings and numbers are UTF-8, and so is what CSV adds to them.
    String::from_utf8(bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e).into())
}

/// Left-aligned columns, two spaces apart, the header underlined.
fn table(cells: &[Vec<String>]) -> String {
    let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            cells
                .iter()
                .filter_map(|row| row.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        name: &'static str,
        value: Option<f64>,
    }

    #[test]
    fn the_three_formats_carry_the_same_rows() {
        let rows = [
            Row {
                name: "a, with comma",
                value: Some(1.5),
            },
            Row {
                name: "b",
                value: None,
            },
        ];
        let render =
            |f| String::from_utf8(Rows::listing("test", &rows).to_bytes(f).unwrap()).unwrap();
        let table = render(Format::Table);
        assert_eq!(
            table,
            "name           value\n-------------  -----\na, with comma  1.5\nb\n"
        );
        assert_eq!(
            render(Format::Csv),
            "name,value\n\"a, with comma\",1.5\nb,\n"
        );
        let json: serde_json::Value = serde_json::from_str(&render(Format::Json)).unwrap();
        assert_eq!(json[1]["value"], serde_json::Value::Null);
        assert_eq!(render_empty(), "(none)\n");
    }

    fn render_empty() -> String {
        let rows: [Row; 0] = [];
        String::from_utf8(
            Rows::listing("test", &rows)
                .to_bytes(Format::Table)
                .unwrap(),
        )
        .unwrap()
    }
}
