//! The PDF of an HTML report, printed by headless Chromium (`--format pdf`): kept apart
//! from the reports that offer it and below the writer trait, whose error names a failed
//! print, so neither imports the other.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long Chromium may take to print: generous, since it lays out every chart and the
/// machine may be busy; a hung browser is killed after it.
const PRINT_TIMEOUT: Duration = Duration::from_secs(180);
/// The virtual time the page gets before printing: its scripts draw every chart at load,
/// with animation off, so this is far more than enough.
const VIRTUAL_TIME_BUDGET_MS: u32 = 10_000;

/// Why the PDF could not be printed.
#[derive(Debug, thiserror::Error)]
pub enum PdfError {
    #[error(
        "the PDF is printed by headless Chromium, and `{binary}` could not be run ({reason}); \
         install chromium (or set STACKBENCH_CHROMIUM to its path), or leave pdf out of --format"
    )]
    NoChromium { binary: String, reason: String },
    #[error("`{binary}` printing {html} failed: {detail}")]
    Print {
        binary: String,
        html: PathBuf,
        detail: String,
    },
}

/// The Chromium binary: `STACKBENCH_CHROMIUM` when set, else `chromium` on the PATH.
pub fn chromium_binary() -> String {
    std::env::var("STACKBENCH_CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

/// Checks that Chromium runs at all, so a report asked for as PDF fails before anything
/// is written.
pub fn check_chromium() -> Result<String, PdfError> {
    let binary = chromium_binary();
    match Command::new(&binary).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(binary),
        Ok(out) => Err(PdfError::NoChromium {
            binary,
            reason: format!("--version exited with {}", out.status),
        }),
        Err(e) => Err(PdfError::NoChromium {
            binary,
            reason: e.to_string(),
        }),
    }
}

/// How stackbench starts headless Chromium anywhere (the PDF here, the browser tests):
/// no sandbox (it runs as root in CI), no GPU, no first-run or extension work, and no
/// background networking, whose connections a closed network refuses many at a time.
pub const HEADLESS_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
];

/// Prints `html` (a file) to `pdf` with headless Chromium: a throwaway profile, no
/// background networking (the page fetches nothing), no header or footer.
pub fn print_pdf(html: &Path, pdf: &Path) -> Result<(), PdfError> {
    let binary = check_chromium()?;
    let failed = |detail: String| PdfError::Print {
        binary: binary.clone(),
        html: html.to_path_buf(),
        detail,
    };
    let profile = tempfile::tempdir().map_err(|e| failed(format!("a profile directory: {e}")))?;
    let mut child = Command::new(&binary)
        .args(HEADLESS_FLAGS)
        .args([
            "--disable-component-update",
            "--disable-sync",
            "--no-pdf-header-footer",
            "--run-all-compositor-stages-before-draw",
        ])
        .arg(format!("--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}"))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(format!("file://{}", html.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    // Drain stderr on its own thread: Chromium logs freely and must never block on a full pipe.
    let stderr = child.stderr.take();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = stderr {
            let _ = std::io::Read::read_to_string(&mut pipe, &mut text);
        }
        text
    });
    let deadline = Instant::now() + PRINT_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!(
                    "no PDF after {} s (killed)",
                    PRINT_TIMEOUT.as_secs()
                )));
            }
            Err(e) => return Err(failed(e.to_string())),
        }
    };
    let log = log.join().unwrap_or_default();
    let head = std::fs::read(pdf)
        .map(|bytes| bytes.starts_with(b"%PDF"))
        .unwrap_or(false);
    if !status.success() || !head {
        let tail: String = log.lines().rev().take(5).collect::<Vec<_>>().join(" / ");
        return Err(failed(format!(
            "exit {status}, {}; {tail}",
            if head {
                "a PDF written"
            } else {
                "no PDF written"
            }
        )));
    }
    Ok(())
}
