//! stackbench-serve: the web dashboard (docs/ARCHITECTURE.md). [`serve`] answers pages and a
//! JSON API over the results store and the report models, and takes uploads. The only crate
//! of the workspace with an async runtime. The floors below are re-exported under the names
//! they always had.

// Every floor below, under the names the dashboard crate gives them: one list, there.
pub use stackbench_report::*;

pub mod serve;
