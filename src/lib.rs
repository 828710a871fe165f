//! stackbench: a Criterion-based benchmark harness for ML/GPU stacks, with a regression gate.
//!
//! The crate follows the path of one number (see ARCHITECTURE in the repository docs):
//! a backend runs a workload inside a Criterion bench target; Criterion writes its files;
//! the reader in [`criterion_output`] turns them into run records kept by [`results`];
//! [`analysis`] judges them with [`stats`], and [`report`] writes what it found.

pub mod analysis;
pub mod backend;
pub mod cli;
pub mod components;
pub mod config;
pub mod criterion_output;
pub mod dashboard;
pub mod files;
pub mod gate;
pub mod harness;
pub mod report;
pub mod results;
pub mod serve;
pub mod sidecar;
pub mod stats;
pub mod system;
pub mod units;
pub mod validate;
pub mod view;
pub mod workload;
