//! Builds a large history database for the store's scale measurement
//! (`scripts/store/scale.sh`): RUNS runs × BENCHMARKS benchmarks × SAMPLES samples each,
//! inserted through the store's own transaction path, plus one more run of BENCHMARKS
//! benchmarks as a JSON file for timing `analyze-trends import`.
//!
//! The runs are written straight into the database, not as JSON files too: at 1,000 ×
//! 1,000 × 100 those files would be several gigabytes of text the measured queries never
//! read. Levels are log-uniform from 100 ns to 10 ms with 3 % log-normal noise; the first
//! 10 benchmarks step up 10 % at 90 % of the runs (inside the latest 200 runs that change-point
//! detection partitions), so history finds a real change point.
//!
//! Usage: cargo run --release --example store_scale -- DIR [RUNS] [BENCHMARKS] [SAMPLES]
//! With `STACKBENCH_STORE=postgres://…` set, the runs go into that store instead of
//! `DIR/stackbench.db` (the import file is still written to DIR).

use stackbench::results::db::{HistoryDb, StoreUrl};
use stackbench::results::{RunRecord, format_rfc3339_ms};
use std::path::{Path, PathBuf};

/// A small deterministic generator (xorshift64*): the same database every time.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = self.next_f64().max(1e-300);
        let v = self.next_f64();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

struct Shape {
    runs: usize,
    benchmarks: usize,
    samples: usize,
}

/// Run `r` as JSON, built through serde so fields added to the record later get their
/// defaults here too.
fn run_json(r: usize, shape: &Shape, levels: &[f64], rng: &mut Rng) -> serde_json::Value {
    let created = 1_800_000_000_000u64 + r as u64 * 3_600_000;
    let step_at = shape.runs * 9 / 10;
    let benchmarks: Vec<serde_json::Value> = levels
        .iter()
        .enumerate()
        .map(|(j, mu)| {
            let level = if j < 10 && r >= step_at {
                mu * 1.1
            } else {
                *mu
            };
            let iters: Vec<f64> = (1..=shape.samples).map(|i| i as f64).collect();
            let times: Vec<f64> = iters
                .iter()
                .map(|n| n * level * (0.03 * rng.normal()).exp())
                .collect();
            serde_json::json!({
                "id": format!("scale/b{j:04}"),
                "group": "scale",
                "function": format!("b{j:04}"),
                "throughput": {"Elements": 1_000_000},
                "samples": {"sampling_mode": "Linear", "iters": iters, "times": times},
            })
        })
        .collect();
    serde_json::json!({
        "schema": "stackbench.run.v1",
        "run_id": format!("scale-{r:05}"),
        "created_unix_ms": created,
        "timestamp": format_rfc3339_ms(created),
        "label": format!("scale run {r}"),
        "git_revision": format!("{:040x}", r),
        "git_dirty": false,
        "source": {"criterion_dir": "simulated", "baseline": "new", "analyzer_version": "scale"},
        "fingerprint": "cpu=scale x2;gpu=none",
        "notes": [],
        "benchmarks": benchmarks,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first().map(PathBuf::from) else {
        return Err("usage: store_scale DIR [RUNS] [BENCHMARKS] [SAMPLES]".into());
    };
    let number = |i: usize, default: usize| -> Result<usize, Box<dyn std::error::Error>> {
        Ok(args
            .get(i)
            .map(|s| s.parse())
            .transpose()?
            .unwrap_or(default))
    };
    let shape = Shape {
        runs: number(1, 1000)?,
        benchmarks: number(2, 1000)?,
        samples: number(3, 100)?,
    };
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    let levels: Vec<f64> = (0..shape.benchmarks)
        .map(|_| 100.0 * 1e5_f64.powf(rng.next_f64()))
        .collect();
    let mut db = match std::env::var("STACKBENCH_STORE") {
        Ok(url) if !url.is_empty() => HistoryDb::open_url(&StoreUrl::parse(&url)?)?,
        _ => HistoryDb::open(&dir)?,
    };
    let started = std::time::Instant::now();
    for r in 0..shape.runs {
        let run: RunRecord = serde_json::from_value(run_json(r, &shape, &levels, &mut rng))?;
        db.insert_run(&run)?;
        if (r + 1) % 100 == 0 {
            eprintln!("{} runs in {:.1} s", r + 1, started.elapsed().as_secs_f64());
        }
    }
    let extra = run_json(shape.runs, &shape, &levels, &mut rng);
    let extra_file = dir.join("import-one-run.json");
    write(&extra_file, &extra)?;
    println!(
        "{} runs x {} benchmarks x {} samples in {} ({:.1} s); one more run in {}",
        shape.runs,
        shape.benchmarks,
        shape.samples,
        db.url(),
        started.elapsed().as_secs_f64(),
        extra_file.display()
    );
    Ok(())
}

fn write(path: &Path, value: &serde_json::Value) -> std::io::Result<()> {
    std::fs::write(path, serde_json::to_vec(value)?)
}
