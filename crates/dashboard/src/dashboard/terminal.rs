//! The dashboard on a real terminal: raw mode and the alternate screen, restored on every
//! way out (quit, error, panic), and a draw loop at a fixed rate that also re-reads the
//! live progress file when following a suite.

use super::app::App;
use crate::sidecar::progress::Progress;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often the screen is redrawn and the progress file re-read.
const TICK: Duration = Duration::from_millis(250);

/// Test-only: the key (one character) that makes the running dashboard panic, so a test
/// can prove the terminal is restored and the panic message still reaches the user.
pub const PANIC_KEY_ENV: &str = "STACKBENCH_DASHBOARD_PANIC_KEY";

/// What live mode follows: the progress file and the Criterion directory's system probe.
pub struct Follow {
    pub progress: PathBuf,
    pub criterion_dir: PathBuf,
}

/// Runs the dashboard until `q`. The terminal is restored before this returns, and by the
/// panic hook `ratatui::init` installs if anything panics while drawing.
pub fn run(mut app: App, follow: Option<Follow>) -> std::io::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let result = event_loop(&mut terminal, &mut app, follow.as_ref());
    ratatui::restore();
    result
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    follow: Option<&Follow>,
) -> std::io::Result<()> {
    let mut last_read = None::<Instant>;
    let panic_key = std::env::var(PANIC_KEY_ENV)
        .ok()
        .and_then(|k| k.chars().next());
    while !app.quit {
        if let Some(f) = follow
            && last_read.is_none_or(|t| t.elapsed() >= TICK)
        {
            refresh_live(app, f)?;
            last_read = Some(Instant::now());
        }
        terminal.draw(|frame| app.draw(frame.area(), frame.buffer_mut()))?;
        if event::poll(TICK)?
            && let Event::Key(key) = event::read()?
            && key.kind == KeyEventKind::Press
        {
            if panic_key.is_some_and(|k| key.code == event::KeyCode::Char(k)) {
                panic!(
                    "{PANIC_KEY_ENV}: panicking on purpose at key {:?}",
                    key.code
                );
            }
            app.on_key(key);
        }
    }
    Ok(())
}

/// Re-reads the progress file and shows what has landed as the live run.
pub fn refresh_live(app: &mut App, follow: &Follow) -> std::io::Result<()> {
    let progress = Progress::read(&follow.progress)?;
    let system = crate::sidecar::read_system_probe(&follow.criterion_dir).and_then(Result::ok);
    let live = super::live::live_run(&progress, system);
    let data = &mut app.data;
    match data.runs.iter().position(|r| r.run_id == "live") {
        Some(i) => data.runs[i] = live,
        None => data.runs.push(live),
    }
    let index = data.runs.len() - 1;
    if data.run == index || data.live.is_none() {
        data.select_run(index);
    }
    data.live = Some(progress);
    Ok(())
}
