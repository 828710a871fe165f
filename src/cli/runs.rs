//! `analyze-trends runs`: the stored runs, newest first.

use super::store::{ListArgs, emit};
use crate::analysis::Outcome;
use crate::report::rows::Rows;

pub fn runs(args: ListArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    let store = chosen.existing(&args.results)?;
    let (runs, problems) = store.list_runs()?;
    for p in &problems {
        eprintln!("warning: {p}");
    }
    emit(&Rows::listing("analyze-trends runs", &runs), args.format)?;
    Ok(Outcome::Clean)
}
