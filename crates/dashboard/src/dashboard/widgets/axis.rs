//! Axes in units. Ratatui has no log axis (ratatui issue 1052), so sizes are plotted as
//! log2 and each tick is labelled with the size it stands for, in bytes or elements. The
//! labels' formatting lives in [`crate::units`], shared with the HTML report's charts.

use crate::units::{SizeUnit, format_number, format_size};

/// Bounds on whole powers of two that hold `[lo, hi]` (log2 values), widened so that
/// `ticks` evenly spaced labels each fall on a whole power.
pub fn log2_bounds(lo: f64, hi: f64, ticks: usize) -> [f64; 2] {
    let lo = lo.floor();
    let mut hi = hi.ceil().max(lo + 1.0);
    let steps = (ticks.max(2) - 1) as f64;
    while ((hi - lo) / steps).fract() != 0.0 {
        hi += 1.0;
    }
    [lo, hi]
}

/// Labels for the bounds from [`log2_bounds`].
pub fn log2_labels(bounds: [f64; 2], ticks: usize, unit: SizeUnit) -> Vec<String> {
    let steps = (ticks.max(2) - 1) as f64;
    (0..ticks.max(2))
        .map(|i| {
            let exp = bounds[0] + (bounds[1] - bounds[0]) * i as f64 / steps;
            format_size(exp.exp2(), unit)
        })
        .collect()
}

/// A linear axis from zero to a round number above `max`, with `ticks` labels.
pub fn linear_bounds(max: f64) -> [f64; 2] {
    if !(max.is_finite() && max > 0.0) {
        return [0.0, 1.0];
    }
    let magnitude = 10f64.powf(max.log10().floor());
    let top = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|t| *t >= max)
        .unwrap_or(10.0 * magnitude);
    [0.0, top]
}

/// Evenly spaced labels over linear bounds, in the fewest digits that tell them apart.
pub fn linear_labels(bounds: [f64; 2], ticks: usize) -> Vec<String> {
    let steps = (ticks.max(2) - 1) as f64;
    (0..ticks.max(2))
        .map(|i| {
            let v = bounds[0] + (bounds[1] - bounds[0]) * i as f64 / steps;
            format_number(v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_ticks_fall_on_whole_powers() {
        let b = log2_bounds(14.0, 27.2, 3);
        assert_eq!(b, [14.0, 28.0]);
        assert_eq!(
            log2_labels(b, 3, SizeUnit::Bytes),
            ["16KiB", "2MiB", "256MiB"]
        );
    }

    #[test]
    fn linear_bounds_round_up() {
        assert_eq!(linear_bounds(17.0), [0.0, 20.0]);
        assert_eq!(linear_bounds(230.0), [0.0, 250.0]);
        assert_eq!(linear_bounds(0.0), [0.0, 1.0]);
        assert_eq!(linear_labels([0.0, 20.0], 3), ["0", "10", "20"]);
    }
}
