//! The view models: what a run's charts show, derived from run records once (each measured
//! benchmark split into its id parts, with its median, rate and size on the x axis; the
//! components' four charts). The dashboard's pages, `stackbench show`'s text charts and the
//! HTML report's run pages all draw from here, so a number reads the same in every view.
//!
//! It sits below both `report` and `dashboard` (it depends on `results`, `analysis` and
//! `workload` only): while it lived in `dashboard/`, the report had to import the dashboard
//! to draw a run, and the dashboard imported the report, a circle. A new view (the web
//! dashboard) takes its page data from here too.

pub mod component_model;
pub mod model;
pub mod telemetry;
