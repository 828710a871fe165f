//! `docs/reference/cli.md`, rendered from the clap command trees of both binaries, so the
//! page cannot say what the command line no longer does. `tests/docs_reference.rs` fails
//! when the committed page differs from [`cli_reference`] and rewrites it with
//! `STACKBENCH_UPDATE_DOCS=1 cargo test --test docs_reference`.
//!
//! Everything but the usage line is written here rather than by clap's help renderer, so
//! the page does not depend on the terminal's width, colours or clap's layout.

use clap::builder::PossibleValue;
use clap::{Arg, ArgAction, Command, CommandFactory};
use std::fmt::Write;

/// The command the page regenerates itself with.
pub const UPDATE_COMMAND: &str = "STACKBENCH_UPDATE_DOCS=1 cargo test --test docs_reference";

/// The whole of `docs/reference/cli.md`.
pub fn cli_reference() -> String {
    let mut out = String::new();
    out.push_str("# Command-line reference\n\n");
    let _ = writeln!(
        out,
        "<!-- Generated from the code (src/cli/reference.rs); do not edit. Regenerate with\n     \
         `{UPDATE_COMMAND}`. -->\n"
    );
    out.push_str(
        "Every command and flag of the two binaries, `stackbench` and `analyze-trends`, as \
         their `--help` states them. Exit codes are in [exit-codes.md](exit-codes.md), the \
         settings a flag shares with a variable and `stackbench.toml` in \
         [configuration.md](configuration.md) and [environment.md](environment.md).\n\n",
    );
    let trees = [
        super::stackbench::StackbenchArgs::command(),
        super::analyze_trends::Cli::command(),
    ];
    out.push_str("## Contents\n\n");
    for tree in &trees {
        let mut tree = tree.clone();
        tree.build();
        contents(&tree, tree.get_name(), 0, &mut out);
    }
    for tree in trees {
        let mut tree = tree;
        tree.build();
        let name = tree.get_name().to_owned();
        command(&tree, &name, &mut out);
    }
    out
}

/// The visible subcommands of a built command (clap's generated `help` left out: every
/// command takes `--help`, which the page says once per command).
fn subcommands(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
}

/// The page's anchor for a command path: GitHub's rule for a heading made of code.
fn anchor(path: &str) -> String {
    path.chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

fn contents(cmd: &Command, path: &str, depth: usize, out: &mut String) {
    let _ = writeln!(out, "{}- [`{path}`](#{})", "  ".repeat(depth), anchor(path));
    for sub in subcommands(cmd) {
        contents(sub, &format!("{path} {}", sub.get_name()), depth + 1, out);
    }
    if depth == 0 {
        out.push('\n');
    }
}

/// One command's section, then its subcommands'.
fn command(cmd: &Command, path: &str, out: &mut String) {
    let level = 2 + path.matches(' ').count().min(2);
    let _ = writeln!(out, "{} `{path}`\n", "#".repeat(level));
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(out, "{}\n", paragraph(&about.to_string()));
    }
    // clap indents a second form (`[DIR]` or `<COMMAND>`) under the first; one per line here.
    let usage = cmd.clone().render_usage().to_string();
    let usage: Vec<&str> = usage
        .trim()
        .trim_start_matches("Usage:")
        .lines()
        .map(str::trim)
        .collect();
    let _ = writeln!(out, "```text\n{}\n```\n", usage.join("\n"));
    if let Some(alias) = visible_command_aliases(cmd) {
        let _ = writeln!(out, "Also spelled: {alias}.\n");
    }
    let top = !path.contains(' ');
    let (positionals, options): (Vec<&Arg>, Vec<&Arg>) = cmd
        .get_arguments()
        .filter(|a| shown(a, top))
        .partition(|a| a.is_positional());
    if !positionals.is_empty() {
        out.push_str("Arguments:\n\n");
        for arg in positionals {
            argument(arg, out);
        }
        out.push('\n');
    }
    if !options.is_empty() {
        out.push_str("Options:\n\n");
        for arg in options {
            argument(arg, out);
        }
        out.push('\n');
    }
    let globals: Vec<String> = cmd
        .get_arguments()
        .filter(|a| !top && a.is_global_set() && !a.is_hide_set())
        .map(|a| format!("`{}`", flag_name(a)))
        .collect();
    if !globals.is_empty() {
        let _ = writeln!(
            out,
            "Also takes the global {} (see `{}`).\n",
            globals.join(", "),
            path.split(' ').next().unwrap_or(path)
        );
    }
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        let _ = writeln!(out, "```text\n{}\n```\n", after.to_string().trim_end());
    }
    for sub in subcommands(cmd) {
        command(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

fn visible_command_aliases(cmd: &Command) -> Option<String> {
    let aliases: Vec<String> = cmd
        .get_visible_aliases()
        .map(|a| format!("`{a}`"))
        .collect();
    (!aliases.is_empty()).then(|| aliases.join(", "))
}

/// Whether an argument belongs on a command's page: hidden ones and clap's own `--help`
/// and `--version` do not, nor a global one below the command that declares it.
fn shown(arg: &Arg, top: bool) -> bool {
    let builtin = matches!(arg.get_id().as_str(), "help" | "version");
    !(arg.is_hide_set() || builtin || (arg.is_global_set() && !top))
}

/// `--format`, `-o, --out` or `<DIR>`.
fn flag_name(arg: &Arg) -> String {
    match (arg.get_short(), arg.get_long()) {
        (Some(s), Some(l)) => format!("-{s}, --{l}"),
        (None, Some(l)) => format!("--{l}"),
        (Some(s), None) => format!("-{s}"),
        (None, None) => format!("<{}>", value_name(arg)),
    }
}

fn value_name(arg: &Arg) -> String {
    arg.get_value_names()
        .and_then(|names| names.first())
        .map(|n| n.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_ascii_uppercase())
}

fn takes_value(arg: &Arg) -> bool {
    !matches!(
        arg.get_action(),
        ArgAction::SetTrue
            | ArgAction::SetFalse
            | ArgAction::Count
            | ArgAction::Help
            | ArgAction::HelpShort
            | ArgAction::HelpLong
            | ArgAction::Version
    )
}

/// One list item: the spelling, the help, then what clap knows of its values.
fn argument(arg: &Arg, out: &mut String) {
    let mut head = flag_name(arg);
    if !arg.is_positional() && takes_value(arg) {
        let _ = write!(head, " <{}>", value_name(arg));
    }
    let repeated = matches!(arg.get_action(), ArgAction::Append)
        || arg
            .get_num_args()
            .is_some_and(|n| n.max_values() > 1 && n.max_values() != n.min_values());
    if repeated {
        head.push_str("...");
    }
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| paragraph(&h.to_string()))
        .unwrap_or_default();
    let _ = write!(out, "- `{head}`");
    if !help.is_empty() {
        let _ = write!(out, ": {}", sentence(help));
    }
    let mut facts = Vec::new();
    if arg.is_required_set() {
        facts.push("Required.".to_owned());
    }
    if let Some(aliases) = arg.get_visible_aliases() {
        let spelled: Vec<String> = aliases.iter().map(|a| format!("`--{a}`")).collect();
        facts.push(format!("Also spelled {}.", spelled.join(", ")));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|d| format!("`{}`", d.to_string_lossy()))
        .collect();
    if !defaults.is_empty() && takes_value(arg) && !arg.is_hide_default_value_set() {
        facts.push(format!("Default: {}.", defaults.join(", ")));
    }
    if !arg.is_hide_possible_values_set() {
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(possible_value)
            .collect();
        if !values.is_empty() && takes_value(arg) {
            facts.push(format!("Values: {}.", values.join("; ")));
        }
    }
    for fact in facts {
        let _ = write!(out, " {fact}");
    }
    out.push('\n');
}

/// `` `markdown` (also `md`): help``
fn possible_value(value: &PossibleValue) -> String {
    let mut names = value.get_name_and_aliases();
    let mut text = format!("`{}`", names.next().unwrap_or_default());
    let aliases: Vec<String> = names.map(|a| format!("`{a}`")).collect();
    if !aliases.is_empty() {
        let _ = write!(text, " (also {})", aliases.join(", "));
    }
    if let Some(help) = value.get_help() {
        let _ = write!(text, ": {}", paragraph(&help.to_string()));
    }
    text
}

/// Help text that ends as a sentence, so the facts after it read apart (clap drops the
/// final full stop of a one-paragraph doc comment).
fn sentence(text: String) -> String {
    if text.ends_with(['.', '!', '?', ':']) {
        text
    } else {
        text + "."
    }
}

/// Help text as one Markdown paragraph: clap's line breaks joined, blank lines kept as a
/// line break, and nothing that would end a list item early.
fn paragraph(text: &str) -> String {
    text.trim()
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    #[command(name = "probe", about = "A probe.")]
    struct Probe {
        /// Where | things go.
        #[arg(long, value_name = "DIR", default_value = "out")]
        out: String,
        /// Pick one.
        #[arg(long, value_parser = ["a", "b"])]
        kind: Option<String>,
        /// A switch.
        #[arg(long)]
        quiet: bool,
        #[arg(long, hide = true)]
        secret: bool,
        /// The input.
        input: String,
    }

    fn rendered() -> String {
        let mut cmd = Probe::command();
        cmd.build();
        let mut out = String::new();
        command(&cmd, "probe", &mut out);
        out
    }

    #[test]
    fn a_flag_is_rendered_with_its_value_name_default_and_help() {
        let text = rendered();
        for line in [
            "- `--out <DIR>`: Where | things go. Default: `out`.",
            "- `--kind <KIND>`: Pick one. Values: `a`; `b`.",
            "- `--quiet`: A switch.\n",
            "- `<INPUT>`: The input. Required.",
            "probe [OPTIONS] <INPUT>",
        ] {
            assert!(text.contains(line), "{line:?} not in\n{text}");
        }
    }

    #[test]
    fn hidden_flags_and_clap_builtins_are_left_out() {
        let text = rendered();
        assert!(!text.contains("secret"), "{text}");
        assert!(!text.contains("--help"), "{text}");
    }

    #[test]
    fn every_visible_subcommand_of_both_binaries_has_a_section() {
        let page = cli_reference();
        for path in [
            "stackbench validate",
            "stackbench serve",
            "analyze-trends gate",
            "analyze-trends store migrate",
        ] {
            assert!(page.contains(&format!("`{path}`\n")), "{path} missing");
        }
        assert!(
            !page.contains("analyze-trends simulate"),
            "hidden command shown"
        );
    }

    #[test]
    fn anchors_follow_githubs_rule() {
        assert_eq!(
            anchor("analyze-trends store migrate"),
            "analyze-trends-store-migrate"
        );
    }
}
