//! Axes in units. Ratatui has no log axis (ratatui issue 1052), so sizes are plotted as
//! log2 and each tick is labelled with the size it stands for, in bytes or elements.

/// What a log2 size axis counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeUnit {
    Bytes,
    Elements,
}

impl SizeUnit {
    pub fn axis_title(self) -> &'static str {
        match self {
            SizeUnit::Bytes => "size (bytes, log2)",
            SizeUnit::Elements => "size (elements, log2)",
        }
    }
}

/// `1KiB`, `256MiB`, `3GiB` for bytes; `512`, `4Ki`, `16Mi` for elements; powers of two
/// exactly, other values rounded to one decimal.
pub fn format_size(value: f64, unit: SizeUnit) -> String {
    const STEPS: [(&str, f64); 4] = [
        ("Ti", 1_099_511_627_776.0),
        ("Gi", 1_073_741_824.0),
        ("Mi", 1_048_576.0),
        ("Ki", 1024.0),
    ];
    let suffix = if unit == SizeUnit::Bytes { "B" } else { "" };
    for (prefix, step) in STEPS {
        if value >= step {
            let scaled = value / step;
            return if (scaled - scaled.round()).abs() < 1e-9 {
                format!("{}{prefix}{suffix}", scaled.round())
            } else {
                format!("{scaled:.1}{prefix}{suffix}")
            };
        }
    }
    format!("{}{suffix}", value.round())
}

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

/// `0`, `2.5`, `120`, `1.2k`: short enough for an axis.
pub fn format_number(v: f64) -> String {
    let a = v.abs();
    if a >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(format_size(1024.0, SizeUnit::Bytes), "1KiB");
        assert_eq!(format_size(256.0 * 1048576.0, SizeUnit::Bytes), "256MiB");
        assert_eq!(format_size(4096.0, SizeUnit::Elements), "4Ki");
        assert_eq!(format_size(512.0, SizeUnit::Elements), "512");
        assert_eq!(format_size(1536.0, SizeUnit::Bytes), "1.5KiB");
    }

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
