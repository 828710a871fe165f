//! `[sweeps.NAME]`: a model sweep's axes, written once and run by name
//! (`stackbench sweep --sweep NAME`). Every key is optional; flags given beside `--sweep`
//! replace the file's value of that axis. Precisions, backends and the device are checked
//! when the file is read, so a typo names its key before anything runs.

use crate::workload::models::plan::RawAxes;
use crate::workload::models::{Precision, SweepBackend, SweepDevice};
use serde::Deserialize;

/// One `[sweeps.NAME]` table.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SweepConfig {
    pub description: Option<String>,
    /// Catalogue names (`gpt2-small`, `ci-llama`, ...) or directories holding a config.json.
    pub models: Option<Vec<String>>,
    pub batch: Option<Vec<u32>>,
    pub seq: Option<Vec<u64>>,
    pub precision: Option<Vec<String>>,
    pub backend: Option<Vec<String>>,
    /// `cpu`, `cuda`, `rocm`, `mps` or `qnn` (default: the best this machine has).
    pub device: Option<String>,
    /// New tokens of each decode cell (default 16).
    pub new_tokens: Option<u64>,
    /// Requests/s offered to serve cells (throughput under load, goodput); none: no serve
    /// cells.
    pub rates: Option<Vec<f64>>,
    /// Per-request SLOs goodput counts against (`ttft<=2s`, `tpot<=200ms`, `e2e<=10s`).
    pub serve_slo: Option<Vec<String>>,
    /// Requests of one serve cell's load run (default 32).
    pub serve_requests: Option<u32>,
    /// Seconds one timed call of a cell may take before its worker is killed.
    pub timeout_s: Option<f64>,
    /// Caps the memory a cell may use below what the device has free.
    pub memory_limit_gib: Option<f64>,
}

impl SweepConfig {
    /// The axes as the plan reads them (unchecked names).
    pub fn raw_axes(&self) -> RawAxes {
        RawAxes {
            models: self.models.clone(),
            batch: self
                .batch
                .as_ref()
                .map(|v| v.iter().map(u32::to_string).collect()),
            seq: self
                .seq
                .as_ref()
                .map(|v| v.iter().map(u64::to_string).collect()),
            precision: self.precision.clone(),
            backend: self.backend.clone(),
            device: self.device.clone(),
            new_tokens: self.new_tokens,
            rates: self
                .rates
                .as_ref()
                .map(|v| v.iter().map(f64::to_string).collect()),
            serve_slos: self.serve_slo.clone(),
            serve_requests: self.serve_requests,
        }
    }

    pub(super) fn check(&self) -> Result<(), (String, String)> {
        let names =
            |key: &str, values: &Option<Vec<String>>, ok: &dyn Fn(&str) -> bool, valid: String| {
                match values.iter().flatten().find(|v| !ok(v)) {
                    Some(bad) => Err((
                        key.to_string(),
                        format!("unknown {key} '{bad}' (valid: {valid})"),
                    )),
                    None => Ok(()),
                }
            };
        names(
            "precision",
            &self.precision,
            &|v| Precision::parse(v).is_some(),
            Precision::valid(),
        )?;
        names(
            "backend",
            &self.backend,
            &|v| SweepBackend::parse(v).is_some(),
            SweepBackend::valid(),
        )?;
        let device = self.device.clone().map(|d| vec![d]);
        names(
            "device",
            &device,
            &|v| SweepDevice::parse(v).is_some(),
            SweepDevice::valid(),
        )?;
        for (key, empty) in [
            ("models", self.models.as_ref().is_some_and(Vec::is_empty)),
            ("batch", self.batch.as_ref().is_some_and(Vec::is_empty)),
            ("seq", self.seq.as_ref().is_some_and(Vec::is_empty)),
        ] {
            if empty {
                return Err((key.into(), "an empty list sweeps nothing".into()));
            }
        }
        if self.batch.iter().flatten().any(|&b| b == 0)
            || self.seq.iter().flatten().any(|&s| s == 0)
        {
            return Err((
                "batch".into(),
                "batch and seq values must be positive".into(),
            ));
        }
        let axes = self.raw_axes();
        if let Err(error) = crate::workload::models::plan::check_serve(&axes) {
            let key = match error {
                crate::workload::models::PlanError::BadRate { .. } => "rates",
                crate::workload::models::PlanError::Empty { axis: "rates" } => "rates",
                crate::workload::models::PlanError::BadNumber { .. } => "serve_requests",
                _ => "serve_slo",
            };
            return Err((key.into(), error.to_string()));
        }
        super::seconds("timeout_s", self.timeout_s)?;
        if self
            .memory_limit_gib
            .is_some_and(|g| !(g.is_finite() && g > 0.0))
        {
            return Err((
                "memory_limit_gib".into(),
                "must be a positive number of GiB".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testing::{parsed, refusal};

    #[test]
    fn a_sweep_table_reads_into_axes_and_bad_names_name_their_key() {
        let config = parsed(
            "[sweeps.nightly]\nmodels = [\"gpt2-small\", \"ci-bert\"]\nbatch = [1, 8]\nseq = [128]\nprecision = [\"fp32\", \"bf16\"]\nbackend = [\"torch\"]\ndevice = \"cpu\"\ntimeout_s = 60\n",
            "stackbench.toml",
        );
        let sweep = config.sweep("nightly").unwrap();
        let raw = sweep.raw_axes();
        assert_eq!(raw.batch, Some(vec!["1".to_string(), "8".to_string()]));
        assert_eq!(raw.precision.unwrap(), vec!["fp32", "bf16"]);
        let err = config.sweep("weekly").unwrap_err().to_string();
        assert!(
            err.contains("unknown sweep 'weekly'") && err.contains("nightly"),
            "{err}"
        );
        for (text, key) in [
            ("[sweeps.x]\nprecision = [\"fp8\"]\n", "sweeps.x.precision"),
            ("[sweeps.x]\nbackend = [\"tensorrt\"]\n", "sweeps.x.backend"),
            ("[sweeps.x]\ndevice = \"tpu\"\n", "sweeps.x.device"),
            ("[sweeps.x]\nbatch = []\n", "sweeps.x.batch"),
            ("[sweeps.x]\nbatch = [0]\n", "sweeps.x.batch"),
            ("[sweeps.x]\nmodles = [\"ci-bert\"]\n", "modles"),
            ("[sweeps.x]\nrates = [0]\n", "sweeps.x.rates"),
            ("[sweeps.x]\nrates = []\n", "sweeps.x.rates"),
            (
                "[sweeps.x]\nserve_slo = [\"ttft_p99<=1s\"]\n",
                "sweeps.x.serve_slo",
            ),
            (
                "[sweeps.x]\nserve_requests = 0\n",
                "sweeps.x.serve_requests",
            ),
        ] {
            let err = refusal(text, "s.toml");
            assert!(err.contains(key) && err.contains("s.toml"), "{text}: {err}");
        }
        let err = refusal("[sweeps.x]\nprecision = [\"fp8\"]\n", "s.toml");
        assert!(err.contains("valid: fp32, bf16, fp16, int8"), "{err}");
    }
}
