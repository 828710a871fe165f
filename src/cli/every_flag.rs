//! Every flag of both command lines says what it does: `--help` is where a user learns a
//! flag, and a flag listed with no line beside it is one they have to read the source for.

use clap::CommandFactory;

/// `command path: --flag` for each visible argument of `cmd` and its subcommands that has
/// no help text.
fn undocumented(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        let builtin = matches!(arg.get_id().as_str(), "help" | "version");
        if arg.is_hide_set() || builtin {
            continue;
        }
        if arg.get_help().is_none() && arg.get_long_help().is_none() {
            let name = arg
                .get_long()
                .map(|l| format!("--{l}"))
                .unwrap_or_else(|| format!("<{}>", arg.get_id()));
            out.push(format!("{path}: {name}"));
        }
    }
    for sub in cmd.get_subcommands() {
        if !sub.is_hide_set() {
            undocumented(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }
}

#[test]
fn every_visible_flag_of_both_command_lines_has_a_help_line() {
    let mut missing = Vec::new();
    undocumented(
        &super::analyze_trends::Cli::command(),
        "analyze-trends",
        &mut missing,
    );
    undocumented(
        &super::stackbench::StackbenchArgs::command(),
        "stackbench",
        &mut missing,
    );
    assert!(
        missing.is_empty(),
        "{} flags without a help line:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn the_check_sees_a_flag_without_help() {
    #[derive(clap::Parser)]
    struct Probe {
        /// Documented.
        #[arg(long)]
        documented: bool,
        #[arg(long)]
        bare: bool,
    }
    let mut missing = Vec::new();
    undocumented(&Probe::command(), "probe", &mut missing);
    assert_eq!(missing, ["probe: --bare"]);
}
