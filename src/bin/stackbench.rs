//! `stackbench`: the system probe (`info`), suites (`suite`), the hardware verdict
//! (`validate`), runs drawn as charts (`dashboard`, `show`), and the web dashboard (`serve`).

use clap::Parser;
use stackbench::cli::dashboard;
use stackbench::cli::stackbench::{Command, StackbenchArgs};
use stackbench::probe::SystemProbe;
use stackbench::report::writer::{Format, ReportWriter};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = StackbenchArgs::parse();
    match args.command {
        Command::Info {
            format,
            json,
            no_measure,
        } => {
            let mut probe = SystemProbe::collect_from(Path::new("/"), !no_measure);
            if !no_measure {
                probe = probe.with_device_peaks();
            }
            let format = if json { Format::Json } else { format };
            match probe.write(format, &mut std::io::stdout().lock()) {
                Ok(()) => {
                    // Where the parts that run benchmarks come from (the JSON is the probe's
                    // schema alone).
                    if format == Format::Table {
                        println!();
                        for line in stackbench::validate::parts::report() {
                            println!("{line}");
                        }
                    }
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    stackbench::cli::errors::report("stackbench info", error);
                    ExitCode::FAILURE
                }
            }
        }
        Command::Dashboard(args) => dashboard::dashboard_main(&args),
        Command::Show(args) => dashboard::show_main(&args),
        Command::Validate(args) => stackbench::cli::validate::main(args),
        Command::Suite(args) => stackbench::cli::validate::suite_main(args),
        Command::Config(args) => stackbench::cli::config_get::config_main(args),
        Command::Serve(args) => stackbench::cli::serve::main(args),
        Command::Sweep(args) => stackbench::cli::sweep::main(args),
        Command::Recommend(args) => stackbench::cli::recommend::main(args),
        Command::SweepReport(args) => stackbench::cli::sweep_report::main(args),
        Command::Setup(args) => stackbench::cli::stackbench::setup_main(args),
    }
}
