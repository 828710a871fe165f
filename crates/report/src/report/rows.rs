//! Flat rows as a terminal table, JSON or CSV: the one writer behind every store listing
//! (`runs`, `history`, `comparisons`, `prune`) and `export`. Rows are serialised once through `csv`, so
//! the table's columns are the struct's fields, in order, with the same names as the CSV.

use crate::report::writer::{Format, ReportWriter, WriteError};
use serde::Serialize;
use std::io::Write;

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
}

impl<T: Serialize> ReportWriter for Rows<'_, T> {
    fn command(&self) -> &'static str {
        self.command
    }

    fn formats(&self) -> &'static [Format] {
        self.formats
    }

    /// A table of no rows says so instead of printing a header.
    fn write(&self, format: Format, out: &mut dyn Write) -> Result<(), WriteError> {
        if !self.formats.contains(&format) {
            return Err(self.not_offered(format));
        }
        match format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut *out, self.rows)?;
                Ok(writeln!(out)?)
            }
            Format::Csv => {
                let mut writer = csv::Writer::from_writer(out);
                for row in self.rows {
                    writer.serialize(row)?;
                }
                Ok(writer.flush()?)
            }
            Format::Table if self.rows.is_empty() => Ok(writeln!(out, "(none)")?),
            Format::Table => {
                let mut csv_bytes = Vec::new();
                Rows::listing(self.command, self.rows).write(Format::Csv, &mut csv_bytes)?;
                let mut reader = csv::ReaderBuilder::new()
                    .has_headers(false)
                    .from_reader(csv_bytes.as_slice());
                let cells: Vec<Vec<String>> = reader
                    .records()
                    .map(|r| r.map(|r| r.iter().map(String::from).collect()))
                    .collect::<Result<_, _>>()?;
                Ok(write_table(&cells, out)?)
            }
            other => Err(self.not_offered(other)),
        }
    }
}

/// Left-aligned columns, two spaces apart, the header underlined.
fn write_table(cells: &[Vec<String>], out: &mut dyn Write) -> std::io::Result<()> {
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
    for (i, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        writeln!(out, "{}", line.join("  ").trim_end())?;
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            writeln!(out, "{}", rule.join("  "))?;
        }
    }
    Ok(())
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
