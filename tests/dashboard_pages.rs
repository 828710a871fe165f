//! Snapshot tests of every dashboard page at 80×24 and 120×40, drawn from the fixture runs
//! (`dashboard_support`), plus the keys and the colour rules.

mod dashboard_support;
mod sweep_support;

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use stackbench::dashboard::app::App;
use stackbench::dashboard::text::render_screen;
use stackbench::dashboard::theme::Theme;
use stackbench::dashboard::{Dashboard, PAGES};

fn fixture_app() -> App {
    let runs = dashboard_support::fixture_runs();
    let last = runs.len() - 1;
    App::new(
        Dashboard::from_runs(runs, Vec::new(), last, None),
        Theme::plain(),
    )
}

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::from(code));
}

#[test]
fn every_page_at_80x24_and_120x40() {
    let mut app = fixture_app();
    for (i, page) in PAGES.iter().enumerate() {
        app.page = i;
        for (w, h) in [(80u16, 24u16), (120, 40)] {
            let screen = render_screen(&app, w, h);
            assert_eq!(screen.lines().count(), h as usize);
            insta::assert_snapshot!(format!("page{}_{}_{w}x{h}", i + 1, page.name), screen);
        }
    }
}

#[test]
fn pages_show_the_fixture_numbers_with_units() {
    let mut app = fixture_app();
    let screen = |app: &App| render_screen(app, 120, 40);
    let baseline = screen(&app);
    assert!(baseline.contains("GB/s"), "{baseline}");
    assert!(
        baseline.contains("16KiB") && baseline.contains("4MiB"),
        "log2 ticks labelled in bytes:\n{baseline}"
    );
    assert!(baseline.contains("cpu f32"), "{baseline}");
    key(&mut app, KeyCode::Char('5'));
    let compare = screen(&app);
    assert!(
        compare.contains("before nightly-17 → after nightly-18"),
        "{compare}"
    );
    assert!(compare.contains("3 improved ▲ · 1 degraded ▼"), "{compare}");
    key(&mut app, KeyCode::Char('7'));
    let outcomes = screen(&app);
    assert!(
        outcomes.contains("result mismatch at index 17"),
        "{outcomes}"
    );
    assert!(outcomes.contains("no CUDA driver"), "{outcomes}");
    key(&mut app, KeyCode::Char('6'));
    let trends = screen(&app);
    // The fixture's one 25 % step, found as the one step among 0.4 % run-to-run noise.
    assert!(
        trends.contains("gemm/cpu/f32/1024x1024x1024 (regressed, 1 steps)"),
        "{trends}"
    );
    assert!(trends.contains("step +24.99 %"), "{trends}");
}

/// Accuracy is shown beside speed: the GEMM table's error column and the tensor-op and
/// attention bars carry the accuracy set the run recorded, and an exact (integer) check
/// reads `exact`; a benchmark without one shows no figure it does not have.
#[test]
fn gemm_tensor_op_and_attention_pages_show_accuracy_beside_the_rate() {
    use stackbench::workload::Accuracy;
    let mut runs = dashboard_support::fixture_runs();
    let last = runs.len() - 1;
    let rounded = |eps: f64| Accuracy {
        comparison: stackbench::workload::accuracy::Comparison::Rounded,
        dtype: "f32".into(),
        epsilon: 2f64.powi(-23),
        elements: 4096,
        max_abs_error: 1e-4,
        max_rel_error: 3.1e-3,
        mean_rel_error: 1e-6,
        max_eps_error: eps,
        worst_bound_ratio: 0.01,
        reference: "all of C".into(),
        sliced: false,
    };
    let (mut gemm, mut tensor, mut attention) = (0, 0, 0);
    for b in &mut runs[last].benchmarks {
        if b.id.starts_with("gemm/") {
            b.accuracy = Some(rounded(1.25));
            gemm += 1;
        } else if b.id.starts_with("tensor_ops/") {
            b.accuracy = Some(Accuracy::exact(4096, "all of C", false));
            tensor += 1;
        } else if b.id.starts_with("attention/") {
            b.accuracy = Some(rounded(42.0));
            attention += 1;
        }
    }
    assert!(
        gemm > 0 && tensor > 0,
        "the fixture has GEMM and tensor-op runs"
    );
    let mut app = App::new(
        Dashboard::from_runs(runs, Vec::new(), last, None),
        Theme::plain(),
    );
    let page = |name: &str| PAGES.iter().position(|p| p.name == name).unwrap();
    app.page = page("gemm");
    let screen = render_screen(&app, 160, 50);
    assert!(
        screen.contains("1.25 ε, rel 3.1e-3"),
        "GEMM accuracy missing:\n{screen}"
    );
    app.page = page("tensor-ops");
    let screen = render_screen(&app, 200, 50);
    assert!(
        screen.contains("· exact"),
        "tensor-op accuracy missing beside the rate:\n{screen}"
    );
    if attention > 0 {
        assert!(
            screen.contains("· 42.0 ε"),
            "attention accuracy missing:\n{screen}"
        );
    }
}

/// The components page reads the workers' notes: refused SDPA backends with torch's
/// reason, vLLM's p50/p99 bars, DeepSpeed's phases; a run recorded before the phases
/// draws each stage's single peak instead.
#[test]
fn components_page_draws_refusals_bars_and_old_peaks() {
    let mut app = fixture_app();
    app.page = 3;
    let screen = render_screen(&app, 120, 40);
    for expected in [
        "cudnn refused",
        "efficient, cudnn: refused: No available kernel.",
        "tokens/s",
        "params+optim  ▓ grads  ▒ activations",
        "ZeRO 0",
        "1710 MiB",
        "…offline/b128_in128_out128 e2e",
    ] {
        assert!(screen.contains(expected), "`{expected}`:\n{screen}");
    }
    assert!(!screen.contains("peak only"), "{screen}");
    // ↓ moves the marked line from bf16 to f32, then to the vLLM shape, and stops there.
    assert!(screen.contains("▸bf16"), "{screen}");
    for _ in 0..3 {
        key(&mut app, KeyCode::Down);
    }
    let screen = render_screen(&app, 120, 40);
    assert!(
        screen.contains("▸in128 out128") && !screen.contains("▸f32"),
        "{screen}"
    );
    key(&mut app, KeyCode::Up);
    assert!(render_screen(&app, 120, 40).contains("▸f32"));
    // The same run as an older worker wrote it: no phase notes.
    let mut runs = dashboard_support::fixture_runs();
    let last = runs.len() - 1;
    let target = &mut runs[last].targets[0];
    for (_, entry) in target["benchmarks"].as_object_mut().unwrap() {
        if let Some(notes) = entry.get_mut("notes").and_then(|n| n.as_object_mut()) {
            notes.remove("memory_at_rest_bytes");
            notes.remove("memory_after_backward_bytes");
        }
    }
    let mut app = App::new(
        Dashboard::from_runs(runs, Vec::new(), last, None),
        Theme::plain(),
    );
    app.page = 3;
    let screen = render_screen(&app, 120, 40);
    assert!(screen.contains("peak only"), "{screen}");
    assert!(!screen.contains("params+optim"), "{screen}");
    assert!(screen.contains("1710 MiB"), "{screen}");
}

/// A run whose workers left no notes (the fixture's first): matmul and vLLM still draw
/// from the measured times, without error bars, and the DeepSpeed chart says it has no
/// data rather than drawing nothing.
#[test]
fn components_page_without_notes_says_what_is_missing() {
    let runs = dashboard_support::fixture_runs();
    let mut app = App::new(
        Dashboard::from_runs(runs, Vec::new(), 0, None),
        Theme::plain(),
    );
    app.page = 3;
    let screen = render_screen(&app, 80, 24);
    assert!(
        screen.contains("DeepSpeed memory by ZeRO stage (MiB)"),
        "{screen}"
    );
    assert!(screen.contains("no data in this run"), "{screen}");
    assert!(screen.contains("in128 out128"), "{screen}");
    assert!(screen.contains("bf16"), "{screen}");
    assert!(!screen.contains("refused"), "{screen}");
}

#[test]
fn keys_move_between_pages_select_and_pick_runs() {
    let mut app = fixture_app();
    key(&mut app, KeyCode::Left);
    assert_eq!(app.page, PAGES.len() - 1);
    key(&mut app, KeyCode::Right);
    key(&mut app, KeyCode::Right);
    assert_eq!(app.page, 1);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Up);
    assert_eq!(app.selected[1], 1);
    key(&mut app, KeyCode::Char('?'));
    assert!(render_screen(&app, 80, 24).contains("switch page"));
    key(&mut app, KeyCode::Esc);
    assert!(!app.help && !app.quit);
    key(&mut app, KeyCode::Char('r'));
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.data.run, dashboard_support::RUNS - 2);
    key(&mut app, KeyCode::Char('c'));
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.data.compare, Some(dashboard_support::RUNS - 4));
    key(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
}

#[test]
fn precisions_have_their_colours_and_no_color_turns_them_off() {
    use ratatui::style::Color;
    let colour = Theme { colour: true };
    assert_eq!(colour.dtype(Some("f32")).fg, Some(Color::White));
    assert_eq!(colour.dtype(Some("f16")).fg, Some(Color::Cyan));
    assert_eq!(colour.dtype(Some("bf16")).fg, Some(Color::Yellow));
    assert_eq!(colour.dtype(Some("tf32")).fg, Some(Color::Magenta));
    assert_eq!(colour.warning().fg, Some(Color::LightYellow));
    assert_eq!(colour.failure().fg, Some(Color::LightRed));
    let plain = Theme::plain();
    for style in [
        plain.dtype(Some("f16")),
        plain.warning(),
        plain.failure(),
        plain.before(),
    ] {
        assert_eq!(style.fg, None);
    }
    // The whole screen drawn without colour has no foreground colour anywhere.
    let mut app = fixture_app();
    app.page = 0;
    let area = ratatui::layout::Rect::new(0, 0, 80, 24);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    app.draw(area, &mut buf);
    assert!(
        buf.content.iter().all(|c| c.fg == Color::Reset),
        "NO_COLOR screen has colour"
    );
    app.theme = colour;
    let mut buf = ratatui::buffer::Buffer::empty(area);
    app.draw(area, &mut buf);
    assert!(
        buf.content.iter().any(|c| c.fg == Color::White),
        "colour screen lacks f32 white"
    );
}

/// The trends page of a recorded store whose step was acknowledged with
/// `analyze-trends ack`: the dashboard loads the acknowledgement through the store, judges
/// from it, marks the run on the chart and says who and why.
#[test]
fn trends_mark_an_acknowledged_step_from_the_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dashboard_support::write_fixture_store(dir.path());
    let stepped = "gemm/cpu/f32/1024x1024x1024";
    store
        .acknowledge(&stackbench::results::Acknowledgement {
            bench_id: stepped.into(),
            run_id: "20261101T000000000Z-fixture-9".into(),
            reason: "BLAS upgrade trades speed for accuracy".into(),
            who: "alice".into(),
            created_unix_ms: 1_795_000_000_000,
        })
        .expect("recording the acknowledgement");
    let data = Dashboard::load(&store, None, None).expect("the store loads");
    let mut app = App::new(data, Theme::plain());
    key(&mut app, KeyCode::Char('6'));
    // No longer a regression, the acknowledged benchmark is not listed first: select it.
    let group = stackbench::dashboard::pages::trends::group(&app.data).unwrap();
    let at = group
        .benchmarks
        .iter()
        .position(|b| b.id == stepped)
        .unwrap();
    assert!(
        at > 0,
        "judged from the acknowledged level, it is not first"
    );
    for _ in 0..at {
        key(&mut app, KeyCode::Down);
    }
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        let screen = render_screen(&app, w, h);
        insta::assert_snapshot!(format!("page6_trends_acknowledged_{w}x{h}"), screen);
    }
    let screen = render_screen(&app, 120, 40);
    assert!(
        screen.contains("Acknowledged at run 10 (nightly-10) by alice: BLAS upgrade"),
        "{screen}"
    );
    assert!(screen.contains("ack by alice"), "chart legend:\n{screen}");
    // Judged from the acknowledged level, the step is no longer a regression.
    assert!(
        !screen.contains(&format!("{stepped} (regressed")),
        "{screen}"
    );
    // Without the acknowledgement the same history regresses (the check can fail).
    let plain = fixture_app();
    let t = stackbench::dashboard::pages::trends::group(&plain.data).unwrap();
    let b = t.benchmarks.iter().find(|b| b.id == stepped).unwrap();
    assert!(b.acknowledged.is_none(), "{b:?}");
    assert_eq!(b.status.as_str(), "regressed");
}

/// Page 9 from the cross-hardware fixture (tests/fixtures/hardware: three machines, Grace
/// without a price and without bf16 GEMM), read through the store and priced from the
/// fixture's stackbench.toml.
fn hardware_app() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().expect("temp dir");
    let prices = dashboard_support::copy_hardware_runs(dir.path());
    let store = stackbench::results::RunStore::new(dir.path());
    let prices = stackbench::analysis::prices::Prices::load(&prices)
        .expect("the fixture prices parse")
        .expect("the fixture has a [prices] table");
    let data = Dashboard::load(&store, None, None)
        .expect("the hardware fixture loads")
        .with_prices(&prices);
    let mut app = App::new(data, Theme::plain());
    key(&mut app, KeyCode::Char('9'));
    (dir, app)
}

#[test]
fn hardware_page_at_80x24_and_120x40() {
    let (_dir, app) = hardware_app();
    assert_eq!(PAGES[app.page].name, "hardware");
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        let screen = render_screen(&app, w, h);
        assert_eq!(screen.lines().count(), h as usize);
        insta::assert_snapshot!(format!("page9_hardware_three_machines_{w}x{h}"), screen);
    }
}

#[test]
fn hardware_page_ranks_devices_and_writes_not_measured_and_na() {
    let (_dir, mut app) = hardware_app();
    let report = &app.data.hardware;
    assert_eq!(report.devices.len(), 3, "three fingerprints");
    let screen = render_screen(&app, 120, 40);
    // The matrix names the report's winners, shortened to kind and backend.
    let bf16 = report
        .recommendations
        .iter()
        .find(|r| r.family == "GEMM bf16")
        .expect("a GEMM bf16 family");
    let stackbench::analysis::hardware::Pick::Best { device, score } = &bf16.fastest else {
        panic!("bf16 has a fastest device: {bf16:?}");
    };
    assert!(device.contains("Intel Xeon"), "{bf16:?}");
    let row = screen
        .lines()
        .find(|l| l.contains("GEMM bf16 (2)"))
        .unwrap_or_else(|| panic!("no bf16 row:\n{screen}"));
    assert!(row.contains(&format!(" ({score:.1})")), "{row}");
    // The family's unit beside it: the score is a figure in that unit.
    assert!(
        row.contains("│GEMM bf16 (2)  GFLOP/s    Intel Xeon Plat"),
        "{row}"
    );
    assert!(
        screen.contains("NVIDIA Grace [cpu]"),
        "Grace is listed as not measured on bf16:\n{screen}"
    );
    // The first workload is bf16 GEMM: Grace has no figure and says so.
    assert!(report.rows[0].workload.starts_with("gemm/bf16"));
    assert!(screen.contains("not measured"), "{screen}");
    // Move to an f32 GEMM workload Grace measured: its perf/$ is n/a (no price), never 0.
    let f32_row = report
        .rows
        .iter()
        .position(|r| r.workload.starts_with("gemm/f32") && r.cells.len() == 3)
        .expect("an f32 workload every device measured");
    for _ in 0..f32_row {
        key(&mut app, KeyCode::Down);
    }
    let screen = render_screen(&app, 120, 40);
    let grace = screen
        .lines()
        .find(|l| l.contains("NVIDIA Grace [cpu]") && l.contains("GFLOP/s"))
        .unwrap_or_else(|| panic!("Grace's bar:\n{screen}"));
    assert!(grace.contains("perf/$ n/a"), "{grace}");
    assert!(!grace.contains("not measured"), "{grace}");
}

/// Page 10 (key 0) from the sweeps of two priced machines (`sweep_support`): the
/// recommendation matrix and the selected row's bars, as `stackbench recommend` decides.
fn models_app() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (results, config) = sweep_support::results(dir.path());
    let store = stackbench::results::RunStore::new(&results);
    let prices = stackbench::analysis::prices::Prices::load(&config)
        .expect("the prices parse")
        .expect("the config has a [prices] table");
    let data = Dashboard::load(&store, None, None)
        .expect("the sweeps load")
        .with_prices(&prices);
    let mut app = App::new(data, Theme::plain());
    key(&mut app, KeyCode::Char('0'));
    (dir, app)
}

#[test]
fn models_page_shows_the_recommendation_and_says_no_data() {
    let (_dir, mut app) = models_app();
    assert_eq!(PAGES[app.page].name, "models", "key 0 opens the tenth page");
    let rec = app.data.recommendation.as_ref().expect("a recommendation");
    assert_eq!(rec.hardware.len(), 2, "{rec:?}");
    let screen = render_screen(&app, 120, 40);
    // ci-gpt2 decode: A's newest sweep (2000 tokens/s) beats B (900); A's older sweep at
    // 9e9 tokens/s is not the newest and must not show.
    let row = screen
        .lines()
        .find(|l| l.contains("ci-gpt2 · decode"))
        .unwrap_or_else(|| panic!("no ci-gpt2 row:\n{screen}"));
    assert!(row.contains("2000 tokens/s"), "{row}");
    assert!(row.contains("900 tokens/s"), "{row}");
    assert!(row.contains("GPU-A: torch fp32 b1 s128"), "{row}");
    assert!(!screen.contains("9000000000"), "{screen}");
    // ci-vit forward: B's cell failed, so B has no data; the bars say so rather than 0.
    let vit = screen
        .lines()
        .find(|l| l.contains("ci-vit · forward"))
        .unwrap_or_else(|| panic!("no ci-vit row:\n{screen}"));
    assert!(vit.contains("no data"), "{vit}");
    key(&mut app, KeyCode::Down);
    let screen = render_screen(&app, 120, 40);
    assert!(
        screen.contains("ci-vit · forward on each machine"),
        "{screen}"
    );
    let bar = screen
        .lines()
        .find(|l| l.contains("GPU-B") && l.contains("no data"))
        .unwrap_or_else(|| panic!("no GPU-B bar:\n{screen}"));
    assert!(bar.contains("no data"), "{bar}");
    insta::assert_snapshot!("page10_models_two_machines_120x40", screen);
}

#[test]
fn models_page_without_sweeps_says_why() {
    let mut app = fixture_app();
    key(&mut app, KeyCode::Char('0'));
    let screen = render_screen(&app, 100, 20);
    assert!(
        screen.contains("No recommendation: the store holds no measured model sweep cell"),
        "{screen}"
    );
}
