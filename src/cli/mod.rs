//! Argument structs for the binaries, one file per subcommand: the binaries stay thin, the
//! parsing is testable here.

pub mod ack;
pub mod analyze_trends;
pub mod bisect;
pub mod compare;
pub mod comparisons;
pub mod config_get;
pub mod dashboard;
pub mod errors;
#[cfg(test)]
mod every_flag;
#[cfg(test)]
mod every_format;
pub mod export;
pub mod gate;
pub mod hardware;
pub mod history;
pub mod import;
pub mod judge;
pub mod prune;
pub mod recommend;
pub mod record;
pub mod reference;
pub mod report;
pub mod results_default;
pub mod runs;
pub mod serve;
pub mod settings;
pub mod simulate;
pub mod spelling;
pub mod stackbench;
pub mod store;
pub mod store_admin;
pub mod store_flush;
pub mod sweep;
pub mod sweep_report;
pub mod validate;
