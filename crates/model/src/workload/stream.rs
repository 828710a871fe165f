//! Memory-bandwidth kernels in the STREAM/BabelStream sense, their byte counts, and the
//! check STREAM itself runs on the arrays afterwards.
//!
//! Bytes are counted as STREAM counts them: arrays read plus arrays written per element,
//! with no write-allocate traffic. Copy 2, scale 2, add 3, triad 3; read (a sum) 1 and
//! write (a fill) 1.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// STREAM's scalar `q` (BabelStream's `startScalar` is 0.4; STREAM's is 3.0).
pub const SCALAR: f64 = 3.0;
/// STREAM's initial values of arrays a, b, c.
pub const INIT_A: f64 = 1.0;
pub const INIT_B: f64 = 2.0;
pub const INIT_C: f64 = 0.0;
/// The value the write kernel fills with.
pub const FILL: f64 = 7.0;

/// A bandwidth kernel over arrays `a`, `b`, `c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamKernel {
    /// c = a
    Copy,
    /// b = q·c
    Scale,
    /// c = a + b
    Add,
    /// a = b + q·c
    Triad,
    /// s = Σ a
    Read,
    /// a = fill
    Write,
}

impl StreamKernel {
    pub const ALL: [StreamKernel; 6] = [
        StreamKernel::Copy,
        StreamKernel::Scale,
        StreamKernel::Add,
        StreamKernel::Triad,
        StreamKernel::Read,
        StreamKernel::Write,
    ];

    pub fn id(self) -> &'static str {
        match self {
            StreamKernel::Copy => "copy",
            StreamKernel::Scale => "scale",
            StreamKernel::Add => "add",
            StreamKernel::Triad => "triad",
            StreamKernel::Read => "read",
            StreamKernel::Write => "write",
        }
    }

    /// Arrays moved per element, as STREAM counts.
    pub fn arrays_moved(self) -> u64 {
        match self {
            StreamKernel::Copy | StreamKernel::Scale => 2,
            StreamKernel::Add | StreamKernel::Triad => 3,
            StreamKernel::Read | StreamKernel::Write => 1,
        }
    }

    /// Bytes moved by one pass over `elements` elements of `elem_bytes` each.
    pub fn bytes(self, elements: usize, elem_bytes: usize) -> u64 {
        self.arrays_moved() * (elements * elem_bytes) as u64
    }
}

impl FromStr for StreamKernel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StreamKernel::ALL
            .into_iter()
            .find(|k| k.id() == s)
            .ok_or_else(|| format!("unknown stream kernel '{s}'"))
    }
}

/// The values every element of a, b, c holds after STREAM's sequence (a = 2a once, then
/// copy, scale, add, triad `rounds` times), computed in scalar arithmetic as STREAM's
/// `checkSTREAMresults` does.
pub fn expected_after_rounds(rounds: usize) -> (f64, f64, f64) {
    let (mut a, mut b, mut c) = (INIT_A, INIT_B, INIT_C);
    a *= 2.0;
    for _ in 0..rounds {
        c = a;
        b = SCALAR * c;
        c = a + b;
        a = b + SCALAR * c;
    }
    (a, b, c)
}

/// The values (a, b, c) hold after `kernel` runs on the state `(a, b, c)`. Each STREAM
/// kernel writes one array from the others it does not write, so running it again from
/// its own result changes nothing: the check after any number of timed passes is this.
pub fn expected_after_kernel(kernel: StreamKernel, (a, b, c): (f64, f64, f64)) -> (f64, f64, f64) {
    match kernel {
        StreamKernel::Copy => (a, b, a),
        StreamKernel::Scale => (a, SCALAR * c, c),
        StreamKernel::Add => (a, b, a + b),
        StreamKernel::Triad => (b + SCALAR * c, b, c),
        StreamKernel::Read => (a, b, c),
        StreamKernel::Write => (FILL, b, c),
    }
}

/// STREAM's acceptance test: the average absolute error of an array, relative to the
/// expected value, is below epsilon (1e-13 for f64, as in STREAM).
pub fn check_array(name: &str, values: &[f64], expected: f64) -> Result<(), String> {
    const EPSILON: f64 = 1e-13;
    if values.is_empty() {
        return Err(format!("array {name} is empty"));
    }
    let avg_err = values.iter().map(|v| (v - expected).abs()).sum::<f64>() / values.len() as f64;
    let relative = avg_err / expected.abs().max(f64::MIN_POSITIVE);
    if relative.is_finite() && relative <= EPSILON {
        return Ok(());
    }
    let bad = values
        .iter()
        .position(|v| (v - expected).abs() / expected.abs() > EPSILON);
    Err(format!(
        "array {name}: average relative error {relative:.3e} exceeds {EPSILON:e} (expected {expected}, \
         first bad element {bad:?})"
    ))
}

/// The expected sum from the read kernel over `elements` copies of `value`.
pub fn expected_sum(value: f64, elements: usize) -> f64 {
    value * elements as f64
}

/// The benchmark id `memory_bandwidth/<backend>/<kernel>/<bytes per array>`.
pub fn bench_id(backend: &str, kernel: StreamKernel, bytes_per_array: usize) -> super::BenchId {
    super::BenchId::new(
        super::family::MEMORY_BANDWIDTH.name,
        backend,
        kernel.id(),
        super::ids::format_bytes_id(bytes_per_array),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_follow_stream_counting() {
        let n = 1 << 20;
        assert_eq!(StreamKernel::Copy.bytes(n, 8), 2 * 8 * n as u64);
        assert_eq!(StreamKernel::Triad.bytes(n, 8), 3 * 8 * n as u64);
        assert_eq!(StreamKernel::Read.bytes(n, 8), 8 * n as u64);
        for k in StreamKernel::ALL {
            assert_eq!(k.id().parse::<StreamKernel>().unwrap(), k);
        }
    }

    #[test]
    fn expected_values_match_streams_sequence() {
        // After one round from a=2, b=2, c=0: c=2, b=6, c=8, a=6+24=30.
        assert_eq!(expected_after_rounds(1), (30.0, 6.0, 8.0));
        assert_eq!(expected_after_rounds(0), (2.0, 2.0, 0.0));
    }

    #[test]
    fn every_kernel_is_idempotent_from_its_own_result() {
        let start = expected_after_rounds(1);
        for kernel in StreamKernel::ALL {
            let once = expected_after_kernel(kernel, start);
            assert_eq!(expected_after_kernel(kernel, once), once, "{kernel:?}");
        }
    }

    #[test]
    fn check_array_catches_one_wrong_element() {
        let mut values = vec![30.0; 1000];
        check_array("a", &values, 30.0).unwrap();
        values[500] = 31.0;
        let err = check_array("a", &values, 30.0).unwrap_err();
        assert!(err.contains("Some(500)"), "{err}");
    }
}
