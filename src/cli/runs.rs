//! `analyze-trends runs`: the stored runs, newest first.

use super::store::{ListArgs, emit, existing_store};
use crate::analysis::Outcome;
use crate::report::rows::Rows;

pub fn runs(args: ListArgs) -> anyhow::Result<Outcome> {
    let store = existing_store(&args.results)?;
    let (runs, problems) = store.list_runs()?;
    for p in &problems {
        eprintln!("warning: {p}");
    }
    emit(&Rows::listing("analyze-trends runs", &runs), args.format)?;
    Ok(Outcome::Clean)
}
