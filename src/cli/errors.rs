//! The one way a command reports what ended it (issue 30): every error line on stderr
//! starts `<binary> <command>: error: `, then says what was wrong, naming the file,
//! benchmark, revision or key, and what to do next (the message's own business). Scripts and
//! people can then find a failure in a log with one pattern, whichever command failed.

use std::fmt::Display;

/// `<command>: error: <message>`; `command` is the binary and its subcommand
/// (`stackbench validate`, `analyze-trends gate`), or the binary alone before one was read.
pub fn line(command: &str, message: impl Display) -> String {
    format!("{command}: error: {message}")
}

/// Prints [`line`] on stderr.
pub fn report(command: &str, message: impl Display) {
    eprintln!("{}", line(command, message));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_line_starts_with_the_command_then_error() {
        let error = anyhow::anyhow!("no such file").context("cannot read runs/a.json");
        assert_eq!(
            line("analyze-trends record", format_args!("{error:#}")),
            "analyze-trends record: error: cannot read runs/a.json: no such file"
        );
        assert_eq!(line("stackbench", "x"), "stackbench: error: x");
    }
}
