//! Benchmark ids. Other tools select benchmarks by these strings, so the scheme is fixed:
//! `<family>/<backend>/<function>/<value>`, where Criterion's group is `<family>/<backend>`,
//! its function id `<function>` and its value `<value>`
//! (for example `gemm/cpu/f32/2048x2048x2048`, `memory_bandwidth/cpu/triad/256MiB`).

use std::fmt;

/// One benchmark's id, split the way Criterion splits it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BenchId {
    /// Criterion's group: `<family>/<backend>`.
    pub group: String,
    /// Criterion's function id: a dtype, a kernel, an operation.
    pub function: String,
    /// Criterion's value string: a shape or a size.
    pub value: String,
}

impl BenchId {
    pub fn new(
        family: &str,
        backend: &str,
        function: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        BenchId {
            group: format!("{family}/{backend}"),
            function: function.into(),
            value: value.into(),
        }
    }

    /// The full id as Criterion prints it and as it is stored: `group/function/value`.
    pub fn full(&self) -> String {
        format!("{}/{}/{}", self.group, self.function, self.value)
    }
}

impl fmt::Display for BenchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full())
    }
}

/// A size in bytes written the way ids carry it: the largest binary unit that divides it
/// exactly (`16KiB`, `256MiB`, `1GiB`), or plain bytes (`1000B`).
pub fn format_bytes_id(bytes: usize) -> String {
    const UNITS: [(&str, usize); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, unit) in UNITS {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{name}", bytes / unit);
        }
    }
    format!("{bytes}B")
}

/// Parses what [`format_bytes_id`] writes; `None` for anything else.
pub fn parse_bytes_id(text: &str) -> Option<usize> {
    const UNITS: [(&str, usize); 4] = [
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
        ("B", 1),
    ];
    UNITS.iter().find_map(|(name, unit)| {
        let number = text.strip_suffix(name)?;
        number.parse::<usize>().ok()?.checked_mul(*unit)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_id_matches_the_documented_scheme() {
        let id = BenchId::new("gemm", "cpu", "f32", "2048x2048x2048");
        assert_eq!(id.group, "gemm/cpu");
        assert_eq!(id.full(), "gemm/cpu/f32/2048x2048x2048");
        let id = BenchId::new(
            "memory_bandwidth",
            "cuda",
            "h2d_pinned",
            format_bytes_id(512 << 20),
        );
        assert_eq!(id.full(), "memory_bandwidth/cuda/h2d_pinned/512MiB");
    }

    #[test]
    fn every_family_builds_its_documented_id() {
        use crate::workload::attention::{self, AttentionKernel, AttentionShape};
        use crate::workload::tensor_ops::{self, TensorOp, TensorShape};
        use crate::workload::{DType, GemmShape, StreamKernel, gemm, stream};
        let full = |id: BenchId| id.full();
        assert_eq!(
            full(gemm::bench_id("cpu", DType::F32, GemmShape::square(2048))),
            "gemm/cpu/f32/2048x2048x2048"
        );
        assert_eq!(
            full(stream::bench_id("cuda", StreamKernel::Triad, 1 << 30)),
            "memory_bandwidth/cuda/triad/1GiB"
        );
        assert_eq!(
            full(tensor_ops::bench_id(
                "cpu",
                TensorOp::Add,
                DType::F32,
                TensorShape::new(256, 4096)
            )),
            "tensor_ops/cpu/add_f32/256x4096"
        );
        let shape = AttentionShape::new(1, 8, 1024, 64, true);
        assert_eq!(
            full(attention::bench_id(
                "cpu",
                AttentionKernel::Flash,
                shape,
                DType::F32
            )),
            "attention/cpu/flash_causal_f32/b1_h8_s1024_d64"
        );
    }

    #[test]
    fn byte_ids_round_trip() {
        for bytes in [1000, 16 << 10, 48 << 10, 256 << 20, 1 << 30, 3 << 30] {
            assert_eq!(parse_bytes_id(&format_bytes_id(bytes)), Some(bytes));
        }
        assert_eq!(format_bytes_id(1 << 30), "1GiB");
        assert_eq!(format_bytes_id(1536 << 10), "1536KiB");
        assert_eq!(parse_bytes_id("12XB"), None);
    }
}
