//! A plain table of rows (skips and failures with their reasons, shapes beside the GEMM
//! chart, before/after per benchmark), scrolled to keep the selected row in view.

use super::sparkline::truncate;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Block, Cell, Row, StatefulWidget, Table, TableState, Widget};

#[derive(Clone, Debug)]
pub struct TextTable {
    pub title: String,
    pub header: Vec<String>,
    /// Column widths; the last column takes what is left.
    pub widths: Vec<u16>,
    pub rows: Vec<(Vec<String>, Style)>,
    pub selected: Option<usize>,
    pub selected_style: Style,
}

impl Widget for &TextTable {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let mut constraints: Vec<Constraint> =
            self.widths.iter().map(|w| Constraint::Length(*w)).collect();
        constraints.push(Constraint::Fill(1));
        let rows = self.rows.iter().map(|(cells, style)| {
            Row::new(cells.iter().enumerate().map(|(i, c)| {
                let width = self.widths.get(i).map_or(usize::MAX, |w| *w as usize);
                Cell::from(truncate(c, width))
            }))
            .style(*style)
        });
        let table = Table::new(rows, constraints)
            .header(Row::new(self.header.clone()).style(Style::new().bold()))
            .block(Block::bordered().title(self.title.as_str()))
            .row_highlight_style(self.selected_style);
        let mut state = TableState::default().with_selected(self.selected);
        StatefulWidget::render(table, area, buf, &mut state);
    }
}
