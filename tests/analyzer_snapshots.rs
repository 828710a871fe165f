//! Snapshot tests of the comparison writers on the checked-in Criterion 0.5 and 0.8 trees:
//! the table, Markdown and JSON a reviewer or a script sees. Regenerate after an intended
//! change with `UPDATE_SNAPSHOTS=1 cargo test --test analyzer_snapshots` and review the diff.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

fn check(version: &str, format: &str, extension: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join(format!("tests/fixtures/criterion-{version}"));
    let out = Command::new(BIN)
        .args([
            "compare",
            "base",
            "new",
            "--format",
            format,
            "--criterion-dir",
        ])
        .arg(&dir)
        .current_dir(root)
        .output()
        .unwrap();
    // Paths in the output are made relative so the snapshot does not depend on the checkout.
    let text = String::from_utf8(out.stdout)
        .unwrap()
        .replace(&format!("{}/", root.display()), "");
    let snapshot = root.join(format!(
        "tests/fixtures/snapshots/compare-{version}.{extension}"
    ));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&snapshot, &text).unwrap();
    }
    let expected = std::fs::read_to_string(&snapshot).unwrap_or_default();
    assert_eq!(
        text,
        expected,
        "{} differs (UPDATE_SNAPSHOTS=1 to accept)",
        snapshot.display()
    );
}

#[test]
fn comparison_writers_match_their_snapshots() {
    for version in ["0.5", "0.8"] {
        check(version, "table", "txt");
        check(version, "markdown", "md");
        check(version, "json", "json");
    }
}
