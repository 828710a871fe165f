//! A simulator of Criterion runs with known injected changes: it is how the gate's quality
//! bar is measured (false alarms and detections at fixed seeds) and how its speed is timed
//! on trees of any size. The distributions are explicit so the documentation can state them:
//!
//! - each benchmark has a true per-iteration time `mu`, log-uniform in 100 ns .. 10 ms;
//! - its true change is uniform in `null_range` (the false-alarm population, ±2 %) or in
//!   `slow_range` (the detection population, +7.5 % .. +15 %);
//! - each run of each benchmark is offset by run-to-run drift `exp(drift·Z)` that no
//!   within-run statistic can see;
//! - each sample `i` (of `samples`, Criterion's linear sampling: `i·d` iterations) has
//!   per-iteration time `mu_run·exp(noise·Z_i)`, and with probability `outliers` is also
//!   multiplied by `1.2 .. 2.0` (an interrupt or a neighbour: slow-only, as in practice);
//! - optionally every candidate is also multiplied by `1 + common_shift` (a loaded machine).

use super::compare::{CompareOptions, Side, compare};
use super::verdict::{Status, VerdictRule};
use crate::criterion_output::writer::{WriteError, WrittenBenchmark, write_benchmark};
use crate::criterion_output::{SampleFile, SamplingMode};
use crate::results::{BenchmarkRecord, RunRecord};
use crate::workload::random::SeededRng;
use std::path::Path;

#[derive(Clone, Debug, serde::Serialize)]
pub struct Scenario {
    /// Benchmarks in each population (null and slow).
    pub per_population: usize,
    pub samples: usize,
    /// Standard deviation of log per-iteration time within a run.
    pub noise: f64,
    /// Fraction of samples hit by a slow outlier.
    pub outliers: f64,
    /// Standard deviation of the log offset of each benchmark in each run.
    pub drift: f64,
    pub null_range: (f64, f64),
    pub slow_range: (f64, f64),
    /// A change common to every candidate benchmark (a loaded or different machine).
    pub common_shift: f64,
    pub seed: u64,
}

impl Scenario {
    /// The quality bar's first case: 100 samples, 3 % noise.
    pub fn clean(seed: u64) -> Self {
        Scenario {
            per_population: 1000,
            samples: 100,
            noise: 0.03,
            outliers: 0.0,
            drift: 0.005,
            null_range: (-0.02, 0.02),
            slow_range: (0.075, 0.15),
            common_shift: 0.0,
            seed,
        }
    }

    /// The second case: 20 samples, 10 % noise, 10 % outliers.
    pub fn noisy(seed: u64) -> Self {
        Scenario {
            samples: 20,
            noise: 0.10,
            outliers: 0.10,
            ..Scenario::clean(seed)
        }
    }
}

/// One simulated benchmark: its id and true change (fraction).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Truth {
    pub id: String,
    pub population: &'static str,
    pub true_change: f64,
}

fn normal(rng: &mut SeededRng) -> f64 {
    let mut z = [0.0];
    rng.fill_normal(&mut z);
    z[0]
}

/// Criterion-like linear samples of a benchmark whose run-level time is `mu_run`.
pub fn linear_samples(rng: &mut SeededRng, mu_run: f64, scenario: &Scenario) -> SampleFile {
    let n = scenario.samples as f64;
    // About 5 ms of measurement in total, as Criterion aims for a time budget.
    let d = (5e6 / (mu_run * n * (n + 1.0) / 2.0)).ceil().max(1.0);
    let mut iters = Vec::with_capacity(scenario.samples);
    let mut times = Vec::with_capacity(scenario.samples);
    for i in 1..=scenario.samples {
        let count = d * i as f64;
        let mut per_iter = mu_run * (scenario.noise * normal(rng)).exp();
        if rng.next_f64() < scenario.outliers {
            per_iter *= 1.2 + 0.8 * rng.next_f64();
        }
        iters.push(count);
        times.push((count * per_iter).round().max(1.0));
    }
    SampleFile {
        sampling_mode: Some(SamplingMode::Linear),
        iters,
        times,
    }
}

/// A run named `name` on the machine `fingerprint`, with nothing measured yet: the
/// recorder's own empty run, but with a fixed name and no clock, so simulations repeat.
fn empty_run(name: &str, fingerprint: &str) -> RunRecord {
    let system = serde_json::json!({"fingerprint": fingerprint, "peaks": []});
    RunRecord {
        run_id: name.into(),
        timestamp: String::new(),
        label: Some(name.into()),
        ..RunRecord::new(0, Path::new(""), name, Some(system))
    }
}

/// A simulated benchmark: only its names and samples, as a recorder without notes,
/// telemetry or accuracy would keep it.
fn record(
    id: String,
    group: &str,
    function: String,
    value: Option<String>,
    samples: SampleFile,
) -> BenchmarkRecord {
    BenchmarkRecord {
        function: Some(function),
        value,
        ..BenchmarkRecord::new(id, group, samples)
    }
}

/// A baseline run and a candidate run with the scenario's injected changes.
pub fn simulate_pair(scenario: &Scenario) -> (RunRecord, RunRecord, Vec<Truth>) {
    let mut rng = SeededRng::new(scenario.seed);
    let (mut base, mut cand) = (empty_run("base", "sim"), empty_run("new", "sim"));
    let mut truths = Vec::new();
    for (population, range) in [("null", scenario.null_range), ("slow", scenario.slow_range)] {
        for index in 0..scenario.per_population {
            let id = format!("sim/{population}/{index:05}");
            let mu = 100.0 * 1e5_f64.powf(rng.next_f64());
            let change = range.0 + (range.1 - range.0) * rng.next_f64();
            let mu_base = mu * (scenario.drift * normal(&mut rng)).exp();
            let mu_cand = mu
                * (1.0 + change)
                * (1.0 + scenario.common_shift)
                * (scenario.drift * normal(&mut rng)).exp();
            let s_base = linear_samples(&mut rng, mu_base, scenario);
            let s_cand = linear_samples(&mut rng, mu_cand, scenario);
            let sim = |samples| {
                let value = Some(format!("{index:05}"));
                record(id.clone(), "sim", population.into(), value, samples)
            };
            base.benchmarks.push(sim(s_base));
            cand.benchmarks.push(sim(s_cand));
            truths.push(Truth {
                id,
                population,
                true_change: change,
            });
        }
    }
    base.benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
    cand.benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
    (base, cand, truths)
}

/// Writes the pair as a Criterion tree (baselines `base` and `new`) plus
/// `simulation.json` (the scenario and every benchmark's true change).
pub fn write_pair_tree(root: &Path, scenario: &Scenario) -> Result<Vec<Truth>, WriteError> {
    let (base, cand, truths) = simulate_pair(scenario);
    for (run, baseline) in [(&base, "base"), (&cand, "new")] {
        for b in &run.benchmarks {
            let written = WrittenBenchmark {
                group: &b.group,
                function: b.function.as_deref(),
                value: b.value.as_deref(),
                throughput: b.throughput,
                samples: &b.samples,
            };
            write_benchmark(root, baseline, &written)?;
        }
    }
    let manifest = serde_json::json!({"scenario": scenario, "truths": truths});
    let path = root.join("simulation.json");
    let bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| WriteError {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    std::fs::write(&path, bytes).map_err(|source| WriteError { path, source })?;
    Ok(truths)
}

/// Flag rates of the gate over the two populations, with two reference rules on the same
/// data for scale.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Quality {
    pub false_alarm_rate: f64,
    pub detection_rate: f64,
    pub null_count: usize,
    pub slow_count: usize,
    /// "Regressed" as Criterion decides it, approximated: Welch's t-test on per-iteration
    /// means at p < 0.05 and the 95 % interval of the mean change above its 1 % noise
    /// threshold (normal interval in place of Criterion's bootstrap).
    pub criterion_like: Rates,
    /// A plain threshold: candidate median more than 5 % above the baseline median.
    pub median_threshold: Rates,
}

#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Rates {
    pub false_alarm_rate: f64,
    pub detection_rate: f64,
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (
        mean,
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0),
    )
}

/// Criterion's verdict, approximated (see [`Quality::criterion_like`]).
fn criterion_like_regressed(base: &[f64], cand: &[f64]) -> bool {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let ((mb, vb), (mc, vc)) = (mean_var(base), mean_var(cand));
    let (nb, nc) = (base.len() as f64, cand.len() as f64);
    let se2 = vb / nb + vc / nc;
    let t = (mc - mb) / se2.sqrt();
    let df = se2 * se2 / ((vb / nb).powi(2) / (nb - 1.0) + (vc / nc).powi(2) / (nc - 1.0));
    let Ok(dist) = StudentsT::new(0.0, 1.0, df.max(1.0)) else {
        return false;
    };
    let p = 2.0 * (1.0 - dist.cdf(t.abs()));
    // Relative change of the mean and its standard error by the delta method.
    let change = mc / mb - 1.0;
    let se_change = (vc / nc / (mb * mb) + (mc * mc) * vb / nb / mb.powi(4)).sqrt();
    p < 0.05 && change - 1.96 * se_change > 0.01
}

fn reference_rates(base: &RunRecord, cand: &RunRecord, truths: &[Truth]) -> (Rates, Rates) {
    let mut criterion = Vec::new();
    let mut median_rule = Vec::new();
    for (b, c) in base.benchmarks.iter().zip(&cand.benchmarks) {
        let (x, y) = (b.samples.per_iteration_ns(), c.samples.per_iteration_ns());
        let as_status = |flag: bool| {
            if flag {
                Status::Degraded
            } else {
                Status::Unchanged
            }
        };
        criterion.push((b.id.clone(), as_status(criterion_like_regressed(&x, &y))));
        let m = crate::stats::median;
        median_rule.push((b.id.clone(), as_status(m(&y) / m(&x) - 1.0 > 0.05)));
    }
    let rates = |statuses: &[(String, Status)]| {
        let q = quality_of(statuses, truths, None);
        Rates {
            false_alarm_rate: q.false_alarm_rate,
            detection_rate: q.detection_rate,
        }
    };
    (rates(&criterion), rates(&median_rule))
}

/// Rates from a comparison's statuses (`degraded` counts as flagged) and the truths.
pub fn quality_of(
    statuses: &[(String, Status)],
    truths: &[Truth],
    references: Option<(Rates, Rates)>,
) -> Quality {
    let flagged: std::collections::HashSet<&str> = statuses
        .iter()
        .filter(|(_, s)| *s == Status::Degraded)
        .map(|(id, _)| id.as_str())
        .collect();
    let rate = |population: &str| {
        let members: Vec<&Truth> = truths
            .iter()
            .filter(|t| t.population == population)
            .collect();
        let hit = members
            .iter()
            .filter(|t| flagged.contains(t.id.as_str()))
            .count();
        (hit as f64 / members.len().max(1) as f64, members.len())
    };
    let (false_alarm_rate, null_count) = rate("null");
    let (detection_rate, slow_count) = rate("slow");
    let none = Rates {
        false_alarm_rate: f64::NAN,
        detection_rate: f64::NAN,
    };
    let (criterion_like, median_threshold) = references.unwrap_or((none, none));
    Quality {
        false_alarm_rate,
        detection_rate,
        null_count,
        slow_count,
        criterion_like,
        median_threshold,
    }
}

/// Simulates and judges in memory with `rule`.
pub fn measure_quality(scenario: &Scenario, rule: VerdictRule) -> Quality {
    let (base, cand, truths) = simulate_pair(scenario);
    let options = CompareOptions {
        rule,
        ..CompareOptions::default()
    };
    let side = |name: &str, run| Side {
        name: name.into(),
        run,
    };
    // Both sides carry the same simulated fingerprint: this cannot fail.
    let references = reference_rates(&base, &cand, &truths);
    let Ok(result) = compare(&side("base", &base), &side("new", &cand), &options) else {
        return quality_of(&[], &truths, Some(references));
    };
    let statuses: Vec<(String, Status)> = result
        .comparisons
        .into_iter()
        .map(|c| (c.id, c.status))
        .collect();
    quality_of(&statuses, &truths, Some(references))
}

/// A simulated history: `runs` runs of `benchmarks` benchmarks; the first `stepped`
/// benchmarks get a sustained step of `step_percent` from run `step_at` on; benchmark
/// `stepped` (the next one) gets a single wild run (+30 %) at `step_at`, which must not
/// count as a step.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HistoryScenario {
    pub runs: usize,
    pub benchmarks: usize,
    pub stepped: usize,
    pub step_at: usize,
    pub step_percent: f64,
    pub run: Scenario,
}

/// The run records of a simulated history, oldest first (one hour apart).
pub fn simulate_history(h: &HistoryScenario) -> Vec<RunRecord> {
    let mut rng = SeededRng::new(h.run.seed);
    let mus: Vec<f64> = (0..h.benchmarks)
        .map(|_| 100.0 * 1e5_f64.powf(rng.next_f64()))
        .collect();
    (0..h.runs)
        .map(|r| {
            let mut run = empty_run(&format!("sim-run-{r:03}"), "sim-history");
            run.created_unix_ms = 1_800_000_000_000 + r as u64 * 3_600_000;
            run.timestamp = crate::results::format_rfc3339_ms(run.created_unix_ms);
            run.label = Some(format!("run {r}"));
            for (j, mu) in mus.iter().enumerate() {
                let mut level = mu * (h.run.drift * normal(&mut rng)).exp();
                if j < h.stepped && r >= h.step_at {
                    level *= 1.0 + h.step_percent / 100.0;
                }
                if j == h.stepped && r == h.step_at {
                    level *= 1.3;
                }
                let samples = linear_samples(&mut rng, level, &h.run);
                let function = format!("b{j:04}");
                let id = format!("hist/{function}");
                run.benchmarks
                    .push(record(id, "hist", function, None, samples));
            }
            run
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_pairs_carry_their_truth() {
        let scenario = Scenario {
            per_population: 20,
            ..Scenario::clean(7)
        };
        let (base, cand, truths) = simulate_pair(&scenario);
        assert_eq!(base.benchmarks.len(), 40);
        assert_eq!(cand.benchmarks.len(), 40);
        assert!(truths.iter().all(|t| match t.population {
            "null" => t.true_change.abs() <= 0.02,
            _ => t.true_change >= 0.075,
        }));
        assert!(
            base.benchmarks
                .iter()
                .all(|b| b.samples.usable() == Ok(100))
        );
    }
}
