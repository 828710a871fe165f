//! Argument structs for the binaries: the binaries stay thin, the parsing is testable here.

pub mod analyze_trends;
pub mod config_get;
pub mod dashboard;
pub mod gate;
pub mod hardware;
pub mod results_default;
pub mod stackbench;
pub mod store;
pub mod validate;
