//! `stackbench`: the system probe (`info`), suites (`suite`), the hardware verdict
//! (`validate`), and runs drawn as charts (`dashboard`, `show`).

use clap::Parser;
use stackbench::cli::dashboard;
use stackbench::cli::stackbench::{Command, StackbenchArgs};
use stackbench::dashboard::DashboardError;
use stackbench::system::SystemProbe;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = StackbenchArgs::parse();
    match args.command {
        Command::Info { json, no_measure } => {
            let probe = SystemProbe::collect_from(Path::new("/"), !no_measure);
            if json {
                match serde_json::to_string_pretty(&probe) {
                    Ok(text) => println!("{text}"),
                    Err(error) => {
                        eprintln!("stackbench info: cannot serialise the probe: {error}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", probe.to_text());
            }
            ExitCode::SUCCESS
        }
        Command::Dashboard(args) => {
            exit_for(dashboard::run_dashboard(&args).map(|()| String::new()))
        }
        Command::Show(args) => exit_for(dashboard::show(&args)),
        Command::Validate(args) => stackbench::cli::validate::main(args),
        Command::Suite(args) => stackbench::cli::validate::suite_main(args),
        Command::Config(args) => stackbench::cli::config_get::config_main(args),
    }
}

/// Prints the text, or the error with exit 2 (bad input: no runs, unknown run or page) or
/// 1 (the terminal failed).
fn exit_for(result: Result<String, DashboardError>) -> ExitCode {
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("stackbench: {error}");
            match error {
                DashboardError::Terminal(_) => ExitCode::FAILURE,
                _ => ExitCode::from(2),
            }
        }
    }
}
