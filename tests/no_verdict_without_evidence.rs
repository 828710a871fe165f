//! A verdict on no evidence is never a pass. For each command a user runs, a case where
//! nothing was measured or the samples are unusable, asserting a non-zero exit and a
//! message that names what is missing. One file per area under `tests/no_verdict/`.

#[path = "no_verdict/bisect.rs"]
mod bisect;
#[path = "cli_support/mod.rs"]
mod cli_support;
#[path = "no_verdict/compare.rs"]
mod compare;
#[path = "no_verdict/counted.rs"]
mod counted;
#[path = "no_verdict/history.rs"]
mod history;
#[path = "no_verdict/import.rs"]
mod import;
#[path = "no_verdict/record.rs"]
mod record;
#[path = "no_verdict/remote.rs"]
mod remote;
#[path = "no_verdict/show.rs"]
mod show;
#[path = "no_verdict/support.rs"]
mod support;
#[path = "no_verdict/unsure.rs"]
mod unsure;

#[path = "no_verdict/validate.rs"]
mod validate;
