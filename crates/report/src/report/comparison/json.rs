//! The machine-readable comparison: the `Comparison` model as one JSON object.

use crate::analysis::Comparison;

pub fn render(c: &Comparison) -> String {
    // The model holds only strings, finite numbers (non-finite ones are `None`) and enums.
    let mut text = serde_json::to_string_pretty(c).unwrap_or_else(|e| {
        format!("{{\"schema\": \"stackbench.comparison.v1\", \"error\": \"{e}\"}}")
    });
    text.push('\n');
    text
}
