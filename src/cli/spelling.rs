//! Flags renamed to the one vocabulary of the two sides (`--base`, `--head`; issue 30): the
//! old spelling still works for one release, hidden from help, with a note on stderr naming
//! the new one, so a script keeps running and its owner learns what to change.

/// The value of a renamed flag: the new spelling's, else the old spelling's with a note
/// (`stackbench show: note: --run is now --head; …`). Clap refuses both at once
/// (`conflicts_with`), so at most one is given.
pub fn renamed(
    command: &str,
    (new_flag, new): (&str, Option<&String>),
    (old_flag, old): (&str, Option<&String>),
) -> Option<String> {
    if let Some(value) = new {
        return Some(value.clone());
    }
    let value = old?;
    eprintln!("{}", note(command, new_flag, old_flag));
    Some(value.clone())
}

/// The note an old spelling gets.
pub fn note(command: &str, new_flag: &str, old_flag: &str) -> String {
    format!(
        "{command}: note: {old_flag} is now {new_flag}; {old_flag} still works in this release \
         and goes in the next"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_new_spelling_wins_and_the_old_one_still_works() {
        let v = |s: &str| Some(s.to_string());
        assert_eq!(
            renamed(
                "stackbench show",
                ("--head", v("a").as_ref()),
                ("--run", None)
            ),
            v("a")
        );
        assert_eq!(
            renamed(
                "stackbench show",
                ("--head", None),
                ("--run", v("b").as_ref())
            ),
            v("b")
        );
        assert_eq!(
            renamed("stackbench show", ("--head", None), ("--run", None)),
            None
        );
        assert!(note("stackbench show", "--head", "--run").contains("--run is now --head"));
    }
}
