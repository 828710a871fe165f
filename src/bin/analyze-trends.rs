//! `analyze-trends`: records Criterion runs, compares them and reports trends.
fn main() {
    eprintln!("analyze-trends: not built yet");
    std::process::exit(2);
}
