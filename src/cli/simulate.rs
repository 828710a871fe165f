//! `analyze-trends simulate` (hidden): the simulators behind the gate's quality and speed
//! measurements in docs/measurements/cpu-vm-tooling.md.

use crate::analysis::simulate::{
    HistoryScenario, Scenario, measure_quality, simulate_history, write_pair_tree,
};
use crate::analysis::{Outcome, VerdictRule};
use crate::results::RunStore;
use anyhow::bail;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum SimulateCommand {
    /// Write a Criterion tree with baselines `base` and `new` and known injected changes.
    Tree {
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        scenario: ScenarioArgs,
    },
    /// Judge simulated pairs in memory and print false-alarm and detection rates as JSON.
    Quality {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Number of seeds (from --seed on) to run
        #[arg(long, default_value_t = 1)]
        repeats: u64,
        /// Override the rule's FDR level (for tuning)
        #[arg(long)]
        fdr_q: Option<f64>,
        /// Override the rule's CI floor fraction (for tuning)
        #[arg(long)]
        ci_floor: Option<f64>,
    },
    /// Write a simulated history of runs with one step change into <results>/runs/.
    History {
        #[arg(long)]
        results: PathBuf,
        #[arg(long, default_value_t = 50)]
        runs: usize,
        #[arg(long, default_value_t = 100)]
        benchmarks: usize,
        #[arg(long, default_value_t = 10)]
        stepped: usize,
        #[arg(long, default_value_t = 30)]
        step_at: usize,
        #[arg(long, default_value_t = 10.0)]
        step_percent: f64,
        #[command(flatten)]
        scenario: ScenarioArgs,
    },
}

#[derive(Args, Debug)]
pub struct ScenarioArgs {
    /// `clean` (100 samples, 3 % noise) or `noisy` (20 samples, 10 % noise, 10 % outliers)
    #[arg(long, default_value = "clean")]
    pub preset: String,
    /// Benchmarks per population (null and slow)
    #[arg(long)]
    pub per_population: Option<usize>,
    #[arg(long)]
    pub samples: Option<usize>,
    #[arg(long)]
    pub noise: Option<f64>,
    #[arg(long)]
    pub outliers: Option<f64>,
    #[arg(long)]
    pub drift: Option<f64>,
    /// A change common to every candidate (fraction, e.g. 0.2)
    #[arg(long, default_value_t = 0.0)]
    pub common_shift: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl ScenarioArgs {
    fn scenario(&self) -> anyhow::Result<Scenario> {
        let mut s = match self.preset.as_str() {
            "clean" => Scenario::clean(self.seed),
            "noisy" => Scenario::noisy(self.seed),
            other => bail!("unknown preset `{other}` (clean, noisy)"),
        };
        s.per_population = self.per_population.unwrap_or(s.per_population);
        s.samples = self.samples.unwrap_or(s.samples);
        s.noise = self.noise.unwrap_or(s.noise);
        s.outliers = self.outliers.unwrap_or(s.outliers);
        s.drift = self.drift.unwrap_or(s.drift);
        s.common_shift = self.common_shift;
        if s.samples == 0 {
            bail!("--samples must be at least 1");
        }
        Ok(s)
    }
}

pub fn simulate(cmd: SimulateCommand) -> anyhow::Result<Outcome> {
    match cmd {
        SimulateCommand::Tree { out, scenario } => {
            let truths = write_pair_tree(&out, &scenario.scenario()?)?;
            println!(
                "wrote {} benchmarks × 2 baselines under {}",
                truths.len(),
                out.display()
            );
        }
        SimulateCommand::Quality {
            scenario,
            repeats,
            fdr_q,
            ci_floor,
        } => simulate_quality(&scenario, repeats, fdr_q, ci_floor)?,
        SimulateCommand::History {
            results,
            runs,
            benchmarks,
            stepped,
            step_at,
            step_percent,
            scenario,
        } => {
            let h = HistoryScenario {
                runs,
                benchmarks,
                stepped,
                step_at,
                step_percent,
                run: scenario.scenario()?,
            };
            let store = RunStore::new(&results);
            for run in simulate_history(&h) {
                store.save(&run)?;
            }
            println!(
                "wrote {runs} runs of {benchmarks} benchmarks into {}",
                store.runs_dir().display()
            );
        }
    }
    Ok(Outcome::Clean)
}

/// Prints the quality of the gate (and of the reference rules) over `repeats` seeds.
fn simulate_quality(
    scenario: &ScenarioArgs,
    repeats: u64,
    fdr_q: Option<f64>,
    ci_floor: Option<f64>,
) -> anyhow::Result<()> {
    let base = scenario.scenario()?;
    let default = VerdictRule::default();
    let rule = VerdictRule {
        fdr_q: fdr_q.unwrap_or(default.fdr_q),
        ci_floor_fraction: ci_floor.unwrap_or(default.ci_floor_fraction),
        ..default
    };
    let results: Vec<_> = (0..repeats.max(1))
        .map(|i| {
            let s = Scenario {
                seed: base.seed + i,
                ..base.clone()
            };
            measure_quality(&s, rule)
        })
        .collect();
    let json = serde_json::json!({"scenario": base, "rule": rule, "results": results});
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}
