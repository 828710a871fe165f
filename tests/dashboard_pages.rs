//! Snapshot tests of every dashboard page at 80×24 and 120×40, drawn from the fixture runs
//! (`dashboard_support`), plus the keys and the colour rules.

mod dashboard_support;

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use stackbench::dashboard::app::App;
use stackbench::dashboard::text::render_screen;
use stackbench::dashboard::theme::Theme;
use stackbench::dashboard::{Dashboard, PAGES};

fn fixture_app() -> App {
    let runs = dashboard_support::fixture_runs();
    let last = runs.len() - 1;
    App::new(
        Dashboard::from_runs(runs, Vec::new(), last, None),
        Theme::plain(),
    )
}

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::from(code));
}

#[test]
fn every_page_at_80x24_and_120x40() {
    let mut app = fixture_app();
    for (i, page) in PAGES.iter().enumerate() {
        app.page = i;
        for (w, h) in [(80u16, 24u16), (120, 40)] {
            let screen = render_screen(&app, w, h);
            assert_eq!(screen.lines().count(), h as usize);
            insta::assert_snapshot!(format!("page{}_{}_{w}x{h}", i + 1, page.name), screen);
        }
    }
}

#[test]
fn pages_show_the_fixture_numbers_with_units() {
    let mut app = fixture_app();
    let screen = |app: &App| render_screen(app, 120, 40);
    let baseline = screen(&app);
    assert!(baseline.contains("GB/s"), "{baseline}");
    assert!(
        baseline.contains("16KiB") && baseline.contains("4MiB"),
        "log2 ticks labelled in bytes:\n{baseline}"
    );
    assert!(baseline.contains("cpu f32"), "{baseline}");
    key(&mut app, KeyCode::Char('5'));
    let compare = screen(&app);
    assert!(
        compare.contains("before nightly-17 → after nightly-18"),
        "{compare}"
    );
    assert!(compare.contains("3 improved ▲ · 1 degraded ▼"), "{compare}");
    key(&mut app, KeyCode::Char('7'));
    let outcomes = screen(&app);
    assert!(
        outcomes.contains("result mismatch at index 17"),
        "{outcomes}"
    );
    assert!(outcomes.contains("no CUDA driver"), "{outcomes}");
    key(&mut app, KeyCode::Char('6'));
    let trends = screen(&app);
    assert!(
        trends.contains("gemm/cpu/f32/1024x1024x1024 (regressed, 1 steps)"),
        "{trends}"
    );
}

#[test]
fn keys_move_between_pages_select_and_pick_runs() {
    let mut app = fixture_app();
    key(&mut app, KeyCode::Left);
    assert_eq!(app.page, PAGES.len() - 1);
    key(&mut app, KeyCode::Right);
    key(&mut app, KeyCode::Right);
    assert_eq!(app.page, 1);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Up);
    assert_eq!(app.selected[1], 1);
    key(&mut app, KeyCode::Char('?'));
    assert!(render_screen(&app, 80, 24).contains("switch page"));
    key(&mut app, KeyCode::Esc);
    assert!(!app.help && !app.quit);
    key(&mut app, KeyCode::Char('r'));
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.data.run, dashboard_support::RUNS - 2);
    key(&mut app, KeyCode::Char('c'));
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.data.compare, Some(dashboard_support::RUNS - 4));
    key(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
}

#[test]
fn precisions_have_their_colours_and_no_color_turns_them_off() {
    use ratatui::style::Color;
    let colour = Theme { colour: true };
    assert_eq!(colour.dtype(Some("f32")).fg, Some(Color::White));
    assert_eq!(colour.dtype(Some("f16")).fg, Some(Color::Cyan));
    assert_eq!(colour.dtype(Some("bf16")).fg, Some(Color::Yellow));
    assert_eq!(colour.dtype(Some("tf32")).fg, Some(Color::Magenta));
    assert_eq!(colour.warning().fg, Some(Color::LightYellow));
    assert_eq!(colour.failure().fg, Some(Color::LightRed));
    let plain = Theme::plain();
    for style in [
        plain.dtype(Some("f16")),
        plain.warning(),
        plain.failure(),
        plain.before(),
    ] {
        assert_eq!(style.fg, None);
    }
    // The whole screen drawn without colour has no foreground colour anywhere.
    let mut app = fixture_app();
    app.page = 0;
    let area = ratatui::layout::Rect::new(0, 0, 80, 24);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    app.draw(area, &mut buf);
    assert!(
        buf.content.iter().all(|c| c.fg == Color::Reset),
        "NO_COLOR screen has colour"
    );
    app.theme = colour;
    let mut buf = ratatui::buffer::Buffer::empty(area);
    app.draw(area, &mut buf);
    assert!(
        buf.content.iter().any(|c| c.fg == Color::White),
        "colour screen lacks f32 white"
    );
}
