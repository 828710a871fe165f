//! What the CUDA and ROCm device tests share: the device-or-skip rule and a tally of the
//! benchmarks a test names.
//!
//! The rule: where the probe finds no device the test skips and says why; where it finds
//! one, the test fails unless the backend opens and every benchmark it names was measured
//! (built, checked against its reference, timed). A skip, a failure to open or a wrong
//! result on a machine with the device is a failure, and every one is listed, not just the
//! first.

use stackbench::backend::{Availability, BackendError, BackendKind, TimedWorkload, probe};
use stackbench::family::memory_bandwidth::BandwidthBackend;
use stackbench::family::tensor_ops::TensorOpsBackend;
use stackbench::workload::StreamKernel;
use stackbench::workload::tensor_ops::{TensorOp, TensorShape};
use stackbench::workload::transfer::TransferKind;

/// The opened device, `None` (with the reason printed) where the probe finds none, or a
/// panic where the probe finds a device that does not open.
// gpu_vulkan.rs has its own: a missing lavapipe fails there under STACKBENCH_REQUIRE_TOOLS.
#[allow(dead_code)]
pub fn device_or_skip<B>(kind: BackendKind, open: impl FnOnce() -> Result<B, String>) -> Option<B> {
    match probe(kind) {
        Availability::Unavailable { reason } => {
            eprintln!("skipped: no {kind} device here ({reason})");
            None
        }
        Availability::Available { devices } => match open() {
            Ok(backend) => Some(backend),
            Err(reason) => panic!(
                "the {kind} probe found {} device(s) but the backend did not open: {reason}",
                devices.len()
            ),
        },
    }
}

/// Benchmarks a test named, and the ones that were not measured with why.
#[derive(Default)]
pub struct Tally {
    measured: Vec<String>,
    problems: Vec<String>,
}

impl Tally {
    /// Builds, verifies and times one benchmark; anything short of a timed, checked run
    /// (a skip included) is a problem.
    pub fn measure<'a>(
        &mut self,
        name: impl Into<String>,
        open: impl FnOnce() -> Result<Box<dyn TimedWorkload + 'a>, BackendError>,
        then: impl FnOnce(&dyn TimedWorkload) -> Result<(), String>,
    ) {
        let name = name.into();
        let outcome = open().map_err(|e| kind_of(&e)).and_then(|mut w| {
            w.verify().map_err(|e| kind_of(&e))?;
            let elapsed = w.run(2).map_err(|e| kind_of(&e))?;
            if elapsed.is_zero() {
                return Err("timed as zero".into());
            }
            then(w.as_ref())
        });
        match outcome {
            Ok(()) => self.measured.push(name),
            Err(why) => self.problems.push(format!("{name}: {why}")),
        }
    }

    /// Every STREAM kernel of `dev` on arrays of `bytes_per_array` bytes.
    #[allow(dead_code)]
    pub fn stream_kernels(&mut self, dev: &impl BandwidthBackend, bytes_per_array: usize) {
        for kernel in StreamKernel::ALL {
            self.measure(
                format!("stream {kernel:?}"),
                || dev.stream(kernel, bytes_per_array),
                |_| Ok(()),
            );
        }
    }

    /// Every kind of copy `dev` times, of `bytes` each.
    #[allow(dead_code)]
    pub fn transfers(&mut self, dev: &impl BandwidthBackend, bytes: usize) {
        for kind in TransferKind::ALL {
            self.measure(
                format!("transfer {kind}"),
                || dev.transfer(kind, bytes),
                |_| Ok(()),
            );
        }
    }

    /// Every tensor op of `dev` in every precision it offers, on `shape`.
    #[allow(dead_code)]
    pub fn tensor_ops(&mut self, dev: &impl TensorOpsBackend, shape: TensorShape) {
        for dtype in dev.tensor_dtypes() {
            for op in TensorOp::ALL {
                self.measure(
                    op.function_id(dtype),
                    || dev.tensor_op(op, dtype, shape),
                    |_| Ok(()),
                );
            }
        }
    }

    /// Panics listing every benchmark that was not measured; also when nothing was named.
    pub fn assert_all_measured(&self, what: &str) {
        assert!(
            !self.measured.is_empty() || !self.problems.is_empty(),
            "{what}: no benchmark was named"
        );
        assert!(
            self.problems.is_empty(),
            "{what}: {} of {} benchmarks not measured:\n{}",
            self.problems.len(),
            self.problems.len() + self.measured.len(),
            self.problems.join("\n")
        );
        eprintln!(
            "{what}: all {} benchmarks measured and checked",
            self.measured.len()
        );
    }
}

fn kind_of(e: &BackendError) -> String {
    if e.is_skip() {
        format!("skipped on a machine with the device: {e}")
    } else {
        e.to_string()
    }
}

/// The probe's host link of a device must be there and plausible (over 1 GB/s).
// Each test file compiles this module on its own and not every one uses every helper.
#[allow(dead_code)]
pub fn assert_host_link(properties: &std::collections::BTreeMap<String, serde_json::Value>) {
    let bytes = properties["peaks"]["host_link"]["bytes_per_s"].as_f64();
    assert!(
        bytes.is_some_and(|b| b > 1e9),
        "no host link: {:?}",
        properties.get("host_link_error")
    );
}

/// The `stackbench info` line of `backend` must say what the probe says.
// Each test file compiles this module on its own; only gpu_cuda.rs checks `info`.
#[allow(dead_code)]
pub fn info_line_matches_probe(info: &str, kind: BackendKind) {
    let line = info
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("backend {kind} ")))
        .unwrap_or_else(|| panic!("no 'backend {kind}' line in:\n{info}"));
    let status = line.split_whitespace().nth(2).unwrap_or("");
    let expected = if probe(kind).is_available() {
        "available:"
    } else {
        "unavailable:"
    };
    assert_eq!(status, expected, "{line}");
}
