//! `stackbench show`: pages drawn into a ratatui buffer and printed as text, for logs, CI
//! and the Markdown report. The same page functions as the dashboard, so the two agree.

use super::app::App;
use super::{Dashboard, PAGES, View};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;

/// Text height of a page at `width`: charts need room, so height grows with width.
pub fn page_height(width: u16) -> u16 {
    (width / 3).clamp(20, 40)
}

/// Page `index` as text, `width` columns wide, with its title above it.
pub fn render_page(
    data: &Dashboard,
    index: usize,
    width: u16,
    theme: super::theme::Theme,
) -> String {
    let height = page_height(width);
    let area = Rect::new(0, 0, width, height + 1);
    let mut buf = Buffer::empty(area);
    let page = &PAGES[index];
    Line::from(format!("── {} {} ──", index + 1, page.title))
        .render(Rect { height: 1, ..area }, &mut buf);
    let view = View {
        data,
        theme,
        selected: 0,
    };
    (page.render)(
        &view,
        Rect {
            y: 1,
            height,
            ..area
        },
        &mut buf,
    );
    buffer_to_text(&buf)
}

/// The whole dashboard screen as text (the snapshot tests and `show` use this).
pub fn render_screen(app: &App, width: u16, height: u16) -> String {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    app.draw(area, &mut buf);
    buffer_to_text(&buf)
}

/// Rows of the buffer, trailing blanks trimmed. Wide characters occupy two cells, the
/// second of which is skipped so columns line up as the terminal shows them.
pub fn buffer_to_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        let mut skip = 0usize;
        for x in area.left()..area.right() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let symbol = buf[(x, y)].symbol();
            skip = unicode_width(symbol).saturating_sub(1);
            line.push_str(symbol);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Cells a symbol takes: ratatui stores a wide character in one cell and blanks the next.
fn unicode_width(symbol: &str) -> usize {
    use ratatui::text::Span;
    Span::raw(symbol).width()
}
