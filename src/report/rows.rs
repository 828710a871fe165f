//! Flat rows as a terminal table, JSON or CSV: the one writer behind every store listing
//! (`runs`, `history`, `comparisons`, `prune`). Rows are serialised once through `csv`, so
//! the table's columns are the struct's fields, in order, with the same names as the CSV.

use serde::Serialize;
use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RowFormat {
    Table,
    Json,
    Csv,
}

/// Writes `rows` in `format`. A table of no rows says so instead of printing a header.
pub fn write_rows<T: Serialize>(
    rows: &[T],
    format: RowFormat,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        RowFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, rows).map_err(std::io::Error::other)?;
            writeln!(out)
        }
        RowFormat::Csv => {
            let mut writer = csv::Writer::from_writer(out);
            for row in rows {
                writer.serialize(row).map_err(std::io::Error::other)?;
            }
            writer.flush()
        }
        RowFormat::Table if rows.is_empty() => writeln!(out, "(none)"),
        RowFormat::Table => {
            let mut csv_bytes = Vec::new();
            write_rows(rows, RowFormat::Csv, &mut csv_bytes)?;
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(csv_bytes.as_slice());
            let cells: Vec<Vec<String>> = reader
                .records()
                .map(|r| r.map(|r| r.iter().map(String::from).collect()))
                .collect::<Result<_, _>>()
                .map_err(std::io::Error::other)?;
            write_table(&cells, out)
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
        let render = |f| {
            let mut out = Vec::new();
            write_rows(&rows, f, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let table = render(RowFormat::Table);
        assert_eq!(
            table,
            "name           value\n-------------  -----\na, with comma  1.5\nb\n"
        );
        assert_eq!(
            render(RowFormat::Csv),
            "name,value\n\"a, with comma\",1.5\nb,\n"
        );
        let json: serde_json::Value = serde_json::from_str(&render(RowFormat::Json)).unwrap();
        assert_eq!(json[1]["value"], serde_json::Value::Null);
        assert_eq!(render_empty(), "(none)\n");
    }

    fn render_empty() -> String {
        let mut out = Vec::new();
        write_rows::<Row>(&[], RowFormat::Table, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }
}
