//! `analyze-trends runs`: the stored runs, newest first.

use super::store::{ListArgs, emit, existing_store};
use crate::analysis::Outcome;

pub fn runs(args: ListArgs) -> anyhow::Result<Outcome> {
    let store = existing_store(&args.results)?;
    let (runs, problems) = store.list_runs()?;
    for p in &problems {
        eprintln!("warning: {p}");
    }
    emit(&runs, args.format)?;
    Ok(Outcome::Clean)
}
