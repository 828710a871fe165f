//! `stackbench recommend`: the best hardware, backend, precision and batch per model from
//! the stored sweeps, for stated SLOs and a ranking. Thin: it parses the flags, opens the
//! store, and prints what [`crate::analysis::recommend`] decides. Exit 0 with a
//! recommendation, 2 for bad input (a bad SLO, an unknown model, an empty store).

use crate::analysis::prices::{NoPrices, PriceList};
use crate::analysis::recommend::{Rank, Request, Slo, recommend};
use crate::report::recommend::RECOMMEND_FORMATS;
use crate::report::writer::{Format, ReportWriter};
use anyhow::{Context, bail};
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug, Clone)]
#[command(after_help = "Examples:
  stackbench recommend                                     # fastest measured cell per model
  stackbench recommend --slo ttft_p99<=200ms --slo tpot_p99<=50ms
  stackbench recommend --slo tokens_per_s>=1000 --rank per-dollar --model gpt2-small
  stackbench recommend --rank per-watt --format json > recommend.json

SLO forms: ttft_p99<=200ms, tpot_p99<=50ms, latency_p99<=1s, tokens_per_s>=1000,
samples_per_s>=50. Only measured cells count; the newest sweep of each machine is used.
A model with serve cells (stackbench sweep --rate) has a serve row ranked by goodput, with
TTFT/TPOT judged under load; a TTFT or TPOT SLO then leaves its decode row out.
Per-dollar needs the [prices] table of the config; a device without a price is \"no price\".")]
pub struct RecommendArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// What to print the recommendation as (`md` for short)
    #[arg(long, value_parser = Format::parser(RECOMMEND_FORMATS), default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub location: crate::cli::store::RunsLocation,
}

/// What is asked of the recommendation: the flags `recommend` and `sweep-report` share.
#[derive(Args, Debug, Clone)]
pub struct RequestArgs {
    /// An SLO every picked cell must meet (repeatable), e.g. ttft_p99<=200ms
    #[arg(long, value_name = "SLO")]
    pub slo: Vec<String>,
    /// What the pick maximises
    #[arg(long, value_enum, default_value_t = Rank::Throughput)]
    pub rank: Rank,
    /// Only these models (repeatable or comma-separated)
    #[arg(long, value_delimiter = ',')]
    pub model: Vec<String>,
}

impl RequestArgs {
    /// The request; a bad `--slo` names its valid forms.
    pub fn request(&self) -> anyhow::Result<Request> {
        let slos = self
            .slo
            .iter()
            .map(|text| text.parse::<Slo>())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Request {
            slos,
            rank: self.rank,
            models: self.model.clone(),
        })
    }
}

/// The stored runs of `location` and the price list of its config, for `recommend` and
/// `sweep-report`: a results directory that does not exist is bad input; unreadable runs
/// are warned about and left out.
pub fn load_runs(
    location: &crate::cli::store::RunsLocation,
) -> anyhow::Result<(
    std::path::PathBuf,
    Vec<crate::results::RunRecord>,
    Box<dyn PriceList>,
)> {
    let config = location.config()?;
    let (results, store) = location.open(&config)?;
    if store.is_absent() {
        bail!(
            "results directory {} does not exist (run `stackbench sweep` first)",
            results.display()
        );
    }
    let loaded = store.load_all().context("reading the store")?;
    for problem in &loaded.problems {
        eprintln!("warning: {problem}");
    }
    let prices: Box<dyn PriceList> = match config.prices {
        Some(prices) => Box::new(prices),
        None => Box::new(NoPrices),
    };
    Ok((results, loaded.runs, prices))
}

/// Runs `stackbench recommend`; every error is bad input (exit 2).
pub fn main(args: RecommendArgs) -> ExitCode {
    match execute(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            super::errors::report("stackbench recommend", format_args!("{error:#}"));
            ExitCode::from(2)
        }
    }
}

fn execute(args: &RecommendArgs) -> anyhow::Result<()> {
    let request = args.request.request()?;
    let (results, runs, prices) = load_runs(&args.location)?;
    let rec = recommend(&runs, &request, prices.as_ref())
        .with_context(|| format!("store of {}", results.display()))?;
    rec.write(args.format, &mut std::io::stdout().lock())
        .context("cannot write to stdout")?;
    Ok(())
}
