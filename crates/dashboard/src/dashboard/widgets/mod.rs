//! The chart widgets, one per kind of chart. The dashboard draws them to the terminal and
//! `stackbench show` into a text buffer, so the two cannot drift apart.

pub mod axis;
pub mod bars;
pub mod gauge;
pub mod heatmap;
pub mod line;
pub mod sparkline;
pub mod stacked;
pub mod table;

pub use bars::{BarItem, Bars};
pub use gauge::PeakGauge;
pub use heatmap::Heatmap;
pub use line::{LineChart, Series};
pub use sparkline::SparkRows;
pub use stacked::{Segment, StackedBar};
pub use table::TextTable;
