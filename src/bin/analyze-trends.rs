//! `analyze-trends`: records Criterion runs, compares them and reports trends.
//! Exit codes: 0 clean, 1 regression found, 2 bad input or usage.

use clap::Parser;
use stackbench::cli::analyze_trends::{Cli, Outcome, run};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let code = match run(cli) {
        Ok(Outcome::Clean) => 0,
        Ok(Outcome::RegressionFound) => 1,
        Err(error) => {
            eprintln!("analyze-trends: error: {error:#}");
            2
        }
    };
    std::process::exit(code);
}
