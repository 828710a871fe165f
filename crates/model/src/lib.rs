//! stackbench's ground floor: what is measured and the words it is measured in, with no
//! device, file format or store in sight.
//!
//! [`units`] and [`time`] are the vocabulary; [`workload`] holds every family's ids, axes,
//! FLOP and byte formulas, references and checks; [`stats`] the statistics every verdict
//! stands on; [`files`] the atomic writes every floor above uses so a results directory is
//! never left half-written. Every crate above depends on this one; it depends on none of them.

pub mod files;
pub mod stats;
pub mod time;
pub mod units;
pub mod workload;
