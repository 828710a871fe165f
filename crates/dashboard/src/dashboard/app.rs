//! The dashboard's state and keys, apart from the terminal so both can be tested: a key
//! changes the [`App`], and [`App::draw`] paints a whole screen into a buffer (tabs, the
//! page, a key bar; help or a run picker on top).

use super::live::live_header;
use super::theme::Theme;
use super::{Dashboard, PAGES, View};
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, List, ListItem, ListState, StatefulWidget, Widget};

/// Which run a picker chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickerKind {
    Run,
    Compare,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Picker {
    pub kind: PickerKind,
    pub cursor: usize,
}

pub struct App {
    pub data: Dashboard,
    pub theme: Theme,
    pub page: usize,
    /// Selected row per page.
    pub selected: [usize; PAGES.len()],
    pub help: bool,
    pub picker: Option<Picker>,
    pub quit: bool,
}

const KEYS: &str = "←/→ 0-9 page · ↑/↓ select · r run · c compare · ? help · q quit";

const HELP: [&str; 8] = [
    "←/→ or 1–9, 0 switch page (0 is the tenth)",
    "↑/↓          select a benchmark or series",
    "r            pick the run to show",
    "c            pick the run to compare with",
    "?            this help",
    "q / Esc      quit (Esc closes a picker or help first)",
    "",
    "Pages: 1 baseline 2 GEMM 3 tensor ops 4 components 5 before/after 6 trends 7 skips 8 summary 9 hardware",
];

impl App {
    pub fn new(data: Dashboard, theme: Theme) -> App {
        App {
            data,
            theme,
            page: 0,
            selected: [0; PAGES.len()],
            help: false,
            picker: None,
            quit: false,
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        if let Some(picker) = self.picker {
            return self.on_picker_key(picker, key.code);
        }
        if self.help {
            self.help = !matches!(key.code, KeyCode::Esc | KeyCode::Char('?' | 'q'));
            return;
        }
        let pages = PAGES.len();
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => self.quit = true,
            KeyCode::Right | KeyCode::Tab => self.page = (self.page + 1) % pages,
            KeyCode::Left | KeyCode::BackTab => self.page = (self.page + pages - 1) % pages,
            KeyCode::Char(c @ '0'..='9') => {
                // 1 is the first page and 0 the tenth, as on a keyboard's row.
                let index = (c as usize - '0' as usize + 9) % 10;
                if index < pages {
                    self.page = index;
                }
            }
            KeyCode::Down => {
                let count = (PAGES[self.page].items)(&self.data);
                let s = &mut self.selected[self.page];
                *s = (*s + 1).min(count.saturating_sub(1));
            }
            KeyCode::Up => {
                let s = &mut self.selected[self.page];
                *s = s.saturating_sub(1);
            }
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char('r') => self.open_picker(PickerKind::Run),
            KeyCode::Char('c') => self.open_picker(PickerKind::Compare),
            _ => {}
        }
    }

    fn open_picker(&mut self, kind: PickerKind) {
        let cursor = match kind {
            PickerKind::Run => self.data.run,
            PickerKind::Compare => self.data.compare.unwrap_or(self.data.run.saturating_sub(1)),
        };
        self.picker = Some(Picker { kind, cursor });
    }

    fn on_picker_key(&mut self, mut picker: Picker, code: KeyCode) {
        let last = self.data.runs.len().saturating_sub(1);
        match code {
            KeyCode::Esc | KeyCode::Char('q') => self.picker = None,
            KeyCode::Up => picker.cursor = picker.cursor.saturating_sub(1),
            KeyCode::Down => picker.cursor = (picker.cursor + 1).min(last),
            KeyCode::Enter => {
                match picker.kind {
                    PickerKind::Run => self.data.select_run(picker.cursor),
                    PickerKind::Compare => self.data.compare = Some(picker.cursor),
                }
                self.selected = [0; PAGES.len()];
                self.picker = None;
                return;
            }
            _ => {}
        }
        if self.picker.is_some() {
            self.picker = Some(picker);
        }
    }

    /// Paints the whole screen.
    pub fn draw(&self, area: Rect, buf: &mut Buffer) {
        let live_rows = if self.data.live.is_some() { 3 } else { 0 };
        let [tabs, live, body, keys] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(live_rows),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(area);
        self.tabs(tabs.width).render(tabs, buf);
        if let Some(progress) = &self.data.live {
            live_header(progress, self.theme).render(live, buf);
        }
        let view = View {
            data: &self.data,
            theme: self.theme,
            selected: self.selected[self.page],
        };
        (PAGES[self.page].render)(&view, body, buf);
        Line::styled(KEYS, self.theme.dimmed()).render(keys, buf);
        if self.help {
            overlay(
                area,
                HELP.len() as u16 + 2,
                "Help (? or Esc closes)",
                buf,
                |inner, buf| {
                    for (i, line) in HELP.iter().enumerate() {
                        Line::from(*line).render(
                            Rect {
                                y: inner.y + i as u16,
                                height: 1,
                                ..inner
                            },
                            buf,
                        );
                    }
                },
            );
        }
        if let Some(picker) = self.picker {
            self.draw_picker(picker, area, buf);
        }
    }

    /// Every page's number and title; on a narrow screen only the shown page has its title.
    fn tabs(&self, width: u16) -> Line<'static> {
        let full: usize = PAGES.iter().map(|p| p.title.chars().count() + 4).sum();
        let compact = full > width as usize;
        let mut spans = Vec::new();
        for (i, page) in PAGES.iter().enumerate() {
            let text = if compact && i != self.page {
                format!(" {} ", key_of(i))
            } else {
                format!(" {} {} ", key_of(i), page.title)
            };
            spans.push(if i == self.page {
                Span::styled(text, self.theme.selected())
            } else {
                Span::raw(text)
            });
        }
        Line::from(spans)
    }

    fn draw_picker(&self, picker: Picker, area: Rect, buf: &mut Buffer) {
        let title = match picker.kind {
            PickerKind::Run => "Show run (↑/↓, Enter, Esc)",
            PickerKind::Compare => "Compare with (↑/↓, Enter, Esc)",
        };
        let items: Vec<ListItem> = self
            .data
            .runs
            .iter()
            .map(|r| {
                ListItem::new(format!(
                    "{}  {}  {} benchmarks",
                    r.timestamp,
                    crate::view::model::run_name(r),
                    r.benchmarks.len()
                ))
            })
            .collect();
        let height = (items.len() as u16 + 2)
            .min(area.height.saturating_sub(2))
            .max(3);
        let theme = self.theme;
        overlay(area, height, title, buf, |inner, buf| {
            let mut state = ListState::default().with_selected(Some(picker.cursor));
            StatefulWidget::render(
                List::new(items)
                    .highlight_style(theme.selected())
                    .highlight_symbol("› "),
                inner,
                buf,
                &mut state,
            );
        });
    }
}

/// A bordered box in the middle of `area`, cleared, with `draw` filling its inside.
fn overlay(
    area: Rect,
    height: u16,
    title: &str,
    buf: &mut Buffer,
    draw: impl FnOnce(Rect, &mut Buffer),
) {
    let width = area.width.saturating_sub(4).min(100);
    let height = height.min(area.height);
    let rect = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    Clear.render(rect, buf);
    let block = Block::bordered().title(title);
    let inner = block.inner(rect);
    block.render(rect, buf);
    draw(inner, buf);
}

/// The key of page `index`: 1 to 9, then 0 for the tenth.
fn key_of(index: usize) -> usize {
    (index + 1) % 10
}
