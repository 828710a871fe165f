//! `analyze-trends`: records Criterion runs, compares them and reports trends.
//! Exit codes: 0 clean, 1 regression found, 2 bad input or usage, 3 unsure (compare, gate).

use stackbench::cli::analyze_trends::run;
use stackbench::cli::errors;
use stackbench::cli::results_default::{ParseError, parse_from};
use stackbench::config::Config;

fn main() {
    // `--results` left out means the config's results_dir (stackbench.toml), as `validate`.
    let cli = match parse_from(std::env::args_os(), || Config::discover(None)) {
        Ok(cli) => cli,
        Err(ParseError::Usage(e)) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
        Err(error @ ParseError::Config(_)) => {
            errors::report("analyze-trends", &error);
            std::process::exit(2);
        }
    };
    let command = match &cli.invoked {
        Some(name) => format!("analyze-trends {name}"),
        None => "analyze-trends".to_string(),
    };
    let code = match run(cli) {
        Ok(outcome) => outcome.exit_code(),
        Err(error) => {
            errors::report(&command, format_args!("{error:#}"));
            2
        }
    };
    std::process::exit(code);
}
