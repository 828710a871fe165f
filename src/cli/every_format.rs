//! Every report, in every format, through the one [`ReportWriter`] trait: a format a report
//! offers is written and reads as that format; a format it does not offer is refused with
//! an error naming the command and the formats it has, never written as another. It lives
//! here, on the top floor, because the gate's and bisect's reports are modelled above
//! `report`; and it checks each command's `--format` offers exactly what its writer does.

use crate::analysis::hardware::analyze_hardware;
use crate::analysis::prices::NoPrices;
use crate::analysis::recommend::{
    HardwareColumn, ModelRow, RECOMMEND_SCHEMA, Rank, Recommendation, Verdict,
};
use crate::analysis::simulate::{HistoryScenario, Scenario, simulate_history, simulate_pair};
use crate::analysis::trends::{TrendOptions, analyze_history};
use crate::analysis::{CompareOptions, Comparison, Evidence, Side, compare};
use crate::gate::bisect::history::Commit;
use crate::gate::bisect::{BisectReport, BisectResult};
use crate::gate::{GateComparison, GateInfo, JudgeOptions};
use crate::harness::measure::Measure;
use crate::report::history::HistoryReport as TrendFiles;
use crate::report::pages::{SnapshotPage, SweepPage};
use crate::report::rows::Rows;
use crate::report::writer::{Format, ReportWriter, WriteError};
use crate::results::{HistoryPoint, PruneOutcome, RunRecord, export_rows};
use clap::Parser;

fn history_runs() -> Vec<RunRecord> {
    simulate_history(&HistoryScenario {
        runs: 4,
        benchmarks: 3,
        stepped: 1,
        step_at: 2,
        step_percent: 20.0,
        run: Scenario::clean(7),
    })
}

fn comparison() -> Comparison {
    let (base, candidate, _) = simulate_pair(&Scenario::clean(3));
    let side = |name: &str, run| Side {
        name: name.into(),
        run,
    };
    compare(
        &side("base", &base),
        &side("new", &candidate),
        &CompareOptions::default(),
    )
    .expect("a simulated pair compares")
}

fn gate(comparison: Comparison) -> GateComparison {
    GateComparison {
        comparison,
        gate: GateInfo {
            base: "main".into(),
            head: "pr".into(),
            base_commit: None,
            head_commit: None,
            base_env: Default::default(),
            head_env: Default::default(),
            full_rounds: 4,
            rounds_run: 4,
            remeasured: Vec::new(),
            criterion_args: Vec::new(),
            cpus: Vec::new(),
            runs: Vec::new(),
            measure: Measure::Time,
        },
        rounds: Vec::new(),
        counting: None,
        calibration: None,
        profiles: Vec::new(),
        sampled_functions: Vec::new(),
    }
}

fn recommendation() -> Recommendation {
    Recommendation {
        schema: RECOMMEND_SCHEMA.into(),
        slos: Vec::new(),
        rank: Rank::Throughput,
        price_basis: "no prices given".into(),
        hardware: vec![HardwareColumn {
            fingerprint: "fp-a".into(),
            device: "GPU-A".into(),
            run_id: "run-a".into(),
            price: None,
        }],
        rows: vec![ModelRow {
            model: "gpt2-small".into(),
            phase: "decode".into(),
            cells: vec![Verdict::NoData],
            pick: Verdict::NoData,
            basis: "isolated calls".into(),
        }],
        notes: vec!["a note for people".into()],
    }
}

fn sweep_page() -> SweepPage {
    SweepPage {
        schema: crate::report::pages::SWEEP_REPORT_SCHEMA.into(),
        hardware: Vec::new(),
        hardware_charts: Vec::new(),
        batch_charts: Vec::new(),
        memory_charts: Vec::new(),
        matrix_columns: vec!["GPU-A (fp-a)".into()],
        matrix: Vec::new(),
        basis: Vec::new(),
        recommendation: recommendation(),
    }
}

fn bisect() -> BisectReport {
    let commit = |hash: &str| Commit {
        commit: hash.into(),
        subject: format!("commit {hash}"),
    };
    BisectReport {
        schema: crate::gate::bisect::SCHEMA,
        good: commit("1111111111"),
        bad: commit("2222222222"),
        commits: 3,
        judge: JudgeOptions {
            measure: Measure::Time,
            threshold_percent: 5.0,
            rounds: 4,
            max_rounds: 10,
            filter: None,
            benches: vec!["gemm".into()],
            cpus: Vec::new(),
            criterion_args: Vec::new(),
            profile: None,
        },
        followed: Vec::new(),
        steps: Vec::new(),
        result: BisectResult::NoRegression,
        total_seconds: 12.5,
    }
}

fn history_points() -> Vec<HistoryPoint> {
    (0..4)
        .map(|i| HistoryPoint {
            run_id: format!("run-{i}"),
            timestamp: format!("2026-01-0{}T00:00:00Z", i + 1),
            created_unix_ms: 1_000 * i,
            label: None,
            git_revision: None,
            fingerprint: Some("fp-a".into()),
            median_ns: 100.0 + i as f64,
            min_ns: None,
            samples: 10,
        })
        .collect()
}

/// A verdict of one CPU GEMM judged by a suite that selects it.
fn validation() -> crate::validate::ValidationResult {
    let run: RunRecord = serde_json::from_value(serde_json::json!({
        "schema": "stackbench.run.v1", "run_id": "r", "created_unix_ms": 0, "timestamp": "t",
        "source": {"criterion_dir": "c", "baseline": "new", "analyzer_version": "0"},
        "system": {"gpus": [], "peaks": [], "backends": {"cpu": {"status": "available",
            "devices": [{"name": "cpu"}]}}},
        "benchmarks": [{"id": "gemm/cpu/f32/64x64x64", "group": "gemm/cpu",
            "samples": {"sampling_mode": "Flat", "iters": [1.0, 1.0], "times": [5.0, 6.0]}}]
    }))
    .expect("a run document");
    let config = crate::config::Config::parse(
        "[suites.one]\ninclude = ['^gemm/']\n",
        std::path::Path::new("stackbench.toml"),
    )
    .expect("a config");
    let suite = config.suite("one").expect("the suite");
    crate::validate::validate(&crate::validate::Inputs {
        run: &run,
        suite: &suite,
        config: &config,
        history: &[],
        before: None,
        filter: None,
    })
    .expect("a verdict")
}

/// Checks one report against every format.
fn check(report: &dyn ReportWriter) {
    assert!(!report.formats().is_empty(), "{}", report.command());
    for format in Format::ALL.iter().copied() {
        let written = report.to_bytes(format);
        let what = format!("{} --format {format}", report.command());
        if !report.formats().contains(&format) {
            let error = written.expect_err(&what);
            assert!(
                matches!(error, WriteError::NotOffered { .. }),
                "{what}: {error}"
            );
            let text = error.to_string();
            assert!(
                text.contains(report.command()) && text.contains(format.name()),
                "{what}: {text}"
            );
            for offered in report.formats() {
                assert!(text.contains(offered.name()), "{what}: {text}");
            }
            continue;
        }
        if format == Format::Pdf && crate::report::pdf::check_chromium().is_err() {
            // No Chromium here: the PDF is refused as the environment's fault, not the format's.
            assert!(matches!(written, Err(WriteError::Pdf(_))), "{what}");
            continue;
        }
        let bytes = written.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(!bytes.is_empty(), "{what} wrote nothing");
        let text = String::from_utf8_lossy(&bytes);
        match format {
            Format::Json => {
                serde_json::from_slice::<serde_json::Value>(&bytes)
                    .unwrap_or_else(|e| panic!("{what} is not JSON: {e}"));
            }
            Format::Csv => {
                let mut reader = csv::Reader::from_reader(bytes.as_slice());
                assert!(!reader.headers().expect(&what).is_empty(), "{what}");
                for record in reader.records() {
                    record.unwrap_or_else(|e| panic!("{what} is not CSV: {e}"));
                }
            }
            Format::Html => assert!(text.contains("<html"), "{what}: {text}"),
            Format::Markdown => assert!(text.contains('|') || text.contains('#'), "{what}"),
            Format::Pdf => assert!(bytes.starts_with(b"%PDF"), "{what}"),
            Format::Table => assert!(!text.trim_start().starts_with(['{', '[', '<']), "{what}"),
        }
    }
}

#[test]
fn every_report_is_written_in_every_format_it_offers_and_refuses_the_rest() {
    let runs = history_runs();
    let comparison = comparison();
    check(&comparison);
    check(&gate(comparison));
    check(&analyze_hardware(&runs, &NoPrices));
    check(&recommendation());
    check(&sweep_page());
    check(&bisect());
    let exported = export_rows(&runs);
    check(&super::export::export_report(&exported));
    #[derive(serde::Serialize)]
    struct Listed {
        run_id: &'static str,
        benchmarks: usize,
    }
    let listed = [Listed {
        run_id: "run-1",
        benchmarks: 3,
    }];
    check(&Rows::listing("analyze-trends runs", &listed));
    let points = history_points();
    let order: Vec<(String, Option<String>)> = points
        .iter()
        .map(|p| (p.run_id.clone(), p.fingerprint.clone()))
        .collect();
    let groups =
        super::history::history_groups("gemm/f32/1024", &points, &order, &TrendOptions::default());
    let evidence = Evidence::new();
    check(&super::history::HistoryReport {
        id: "gemm/f32/1024",
        groups: &groups,
        evidence: &evidence,
    });
    let pruned = PruneOutcome {
        removed_runs: vec!["run-0".into()],
        removed_comparisons: 1,
        protected_runs: vec!["run-1".into()],
        kept_runs: 3,
    };
    check(&super::prune::PruneReport {
        outcome: &pruned,
        dry_run: true,
        keep_days: 90,
    });
    let trends = analyze_history(&runs, &TrendOptions::default(), Vec::new());
    check(&crate::probe::SystemProbe::collect_from(
        std::path::Path::new("/"),
        false,
    ));
    check(&validation());
    check(&TrendFiles::new(
        &trends,
        &runs,
        SnapshotPage::of(&trends, &runs),
    ));
}

/// What `--format VALUE` does on each command's command line: parsed, or refused.
fn parses(argv: &[&str], value: &str) -> bool {
    let mut args = argv.to_vec();
    args.extend(["--format", value]);
    match argv[0] {
        "analyze-trends" => super::analyze_trends::Cli::try_parse_from(&args).is_ok(),
        _ => super::stackbench::StackbenchArgs::try_parse_from(&args).is_ok(),
    }
}

#[test]
fn each_command_offers_exactly_its_writers_formats_under_every_spelling() {
    use crate::report::comparison::COMPARISON_FORMATS;
    use crate::report::rows::ROW_FORMATS;
    let commands: [(&[&str], &[Format]); 13] = [
        (&["stackbench", "info"], crate::report::system::INFO_FORMATS),
        (
            &["stackbench", "validate"],
            crate::validate::render::VALIDATE_FORMATS,
        ),
        (&["analyze-trends", "compare", "a", "b"], COMPARISON_FORMATS),
        (&["analyze-trends", "gate"], COMPARISON_FORMATS),
        (
            &["analyze-trends", "hardware"],
            crate::report::hardware::HARDWARE_FORMATS,
        ),
        (
            &["stackbench", "recommend"],
            crate::report::recommend::RECOMMEND_FORMATS,
        ),
        (
            &["stackbench", "sweep-report", "--out", "r"],
            crate::report::sweep::SWEEP_REPORT_FORMATS,
        ),
        (
            &["analyze-trends", "bisect", "--good", "a", "--bad", "b"],
            crate::gate::writer::BISECT_FORMATS,
        ),
        (&["analyze-trends", "export"], super::export::EXPORT_FORMATS),
        (&["analyze-trends", "runs"], ROW_FORMATS),
        (&["analyze-trends", "comparisons"], ROW_FORMATS),
        (&["analyze-trends", "history", "gemm/f32/1024"], ROW_FORMATS),
        (
            &["analyze-trends", "prune", "--keep-days", "9"],
            ROW_FORMATS,
        ),
    ];
    for (argv, offered) in commands {
        for format in Format::ALL {
            let expected = offered.contains(format);
            assert_eq!(parses(argv, format.name()), expected, "{argv:?} {format}");
        }
        // `md` is markdown everywhere: accepted where markdown is, refused where it is not.
        assert_eq!(
            parses(argv, "md"),
            offered.contains(&Format::Markdown),
            "{argv:?} md"
        );
        assert!(!parses(argv, "xml"), "{argv:?} xml");
    }
}
