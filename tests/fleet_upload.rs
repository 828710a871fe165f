//! The Slurm fleet scripts (`ci/slurm/stackbench.sbatch`, `ci/slurm/merge.sbatch`) recording
//! straight into a results server (`STACKBENCH_FLEET_STORE`, what `submit.sh --store` sets)
//! instead of merging files, run as bash scripts with the real `analyze-trends` and a
//! stand-in server; no Slurm is needed for what they do inside one task (ci/slurm/
//! test_local.sh runs the file path under a real one-node cluster). A task whose server is
//! down keeps its run in its spool on the shared filesystem and still counts as delivered;
//! the merge job delivers the spool, and fails while it cannot. Without a store, the task
//! delivers its file into incoming/ as before.

mod pg_support;
mod upload_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use upload_support::{Faults, Stub, closed_port_url};

const ANALYZE_TRENDS: &str = env!("CARGO_BIN_EXE_analyze-trends");
const REPO: &str = env!("CARGO_MANIFEST_DIR");
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/criterion-0.8");

/// A fleet directory as submit.sh lays it out, whose one "bench executable" copies the
/// Criterion fixture into the task's CRITERION_HOME (what a real bench target leaves).
struct Fleet {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    results: PathBuf,
    scratch: PathBuf,
}

impl Fleet {
    fn new() -> Fleet {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("results/fleet/20261125T000000Z-1");
        for sub in ["incoming", "nodes", "logs"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let bench = tmp.path().join("fake-bench");
        std::fs::write(
            &bench,
            format!("#!/bin/sh\nmkdir -p \"$CRITERION_HOME\" && cp -r '{FIXTURE}/.' \"$CRITERION_HOME/\"\n"),
        )
        .unwrap();
        std::fs::set_permissions(&bench, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        std::fs::write(
            dir.join("executables.tsv"),
            format!("memory_bandwidth\t{}\n", bench.display()),
        )
        .unwrap();
        let scratch = tmp.path().join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        Fleet {
            results: tmp.path().join("results"),
            dir,
            scratch,
            _tmp: tmp,
        }
    }

    fn script(&self, name: &str, store: Option<&str>, extra: &[(&str, &str)]) -> Output {
        let mut command = Command::new("bash");
        command
            .arg(Path::new(REPO).join("ci/slurm").join(name))
            .env("STACKBENCH_REPO", REPO)
            .env("STACKBENCH_ANALYZER", ANALYZE_TRENDS)
            .env("STACKBENCH_FLEET_DIR", &self.dir)
            .env("STACKBENCH_FLEET_RESULTS", &self.results)
            .env("STACKBENCH_FLEET_LABEL", "fleet-test")
            .env("STACKBENCH_FLEET_CRITERION_ARGS", "")
            .env("STACKBENCH_FLEET_FILTER", "")
            .env("SLURM_ARRAY_JOB_ID", "77")
            .env("SLURM_ARRAY_TASK_ID", "0")
            .env("SLURMD_NODENAME", "node-a")
            .env("TMPDIR", &self.scratch)
            .env("STACKBENCH_UPLOAD_TRIES", "2")
            .env("STACKBENCH_UPLOAD_BACKOFF_MS", "20")
            .env_remove("STACKBENCH_STORE")
            .env_remove("STACKBENCH_STORE_TOKEN")
            .env_remove("STACKBENCH_FLEET_TOKEN_FILE");
        match store {
            Some(url) => command.env("STACKBENCH_FLEET_STORE", url),
            None => command.env_remove("STACKBENCH_FLEET_STORE"),
        };
        for (k, v) in extra {
            command.env(k, v);
        }
        command.output().expect("run bash")
    }

    fn files(&self, sub: &str) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.dir.join(sub))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.retain(|p| p.extension().is_some_and(|x| x == "json"));
        files
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_fleet_task_records_straight_into_the_server_with_the_token_from_a_file() {
    let fleet = Fleet::new();
    let server = Stub::start(Faults {
        token: Some("fleet-secret".into()),
        ..Faults::default()
    });
    let token_file = fleet.scratch.join("upload.token");
    std::fs::write(&token_file, "fleet-secret\n").unwrap();
    let token = [("STACKBENCH_FLEET_TOKEN_FILE", token_file.to_str().unwrap())];
    let out = fleet.script("stackbench.sbatch", Some(&server.url), &token);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stored = server.stored();
    assert_eq!(stored.len(), 1, "{}", text(&out));
    assert_eq!(
        server.label_of(&stored[0]).as_deref(),
        Some("fleet-test/default/node-a")
    );
    assert!(fleet.files("incoming").is_empty(), "no file to merge");
    assert!(fleet.files("nodes/77_0/spool").is_empty());

    let out = fleet.script("merge.sbatch", Some(&server.url), &token);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("every task's run is in the store"),
        "{}",
        text(&out)
    );
    assert_eq!(server.requests(), 1, "the merge job uploads nothing twice");
}

#[test]
fn a_task_whose_server_is_down_keeps_its_run_and_the_merge_job_delivers_it() {
    let fleet = Fleet::new();
    let down = closed_port_url();
    let out = fleet.script("stackbench.sbatch", Some(&down), &[]);
    // Delivered to the spool on the shared filesystem: the task succeeded.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("SPOOLED"), "{}", text(&out));
    let spooled = fleet.files("nodes/77_0/spool");
    assert_eq!(spooled.len(), 1, "{}", text(&out));

    // The merge job while the server is still down: it fails, and the run stays.
    let out = fleet.script("merge.sbatch", Some(&down), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("still have runs in their spool"),
        "{}",
        text(&out)
    );
    assert_eq!(fleet.files("nodes/77_0/spool"), spooled);

    let server = Stub::start(Faults::default());
    let out = fleet.script("merge.sbatch", Some(&server.url), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(server.stored().len(), 1);
    assert!(fleet.files("nodes/77_0/spool").is_empty());
}

#[test]
fn without_a_store_the_task_delivers_its_file_for_the_merge_as_before() {
    let fleet = Fleet::new();
    let out = fleet.script("stackbench.sbatch", None, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let incoming = fleet.files("incoming");
    assert_eq!(incoming.len(), 1, "{}", text(&out));
    let name = incoming[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("77_0-"), "{name}");
    assert!(!fleet.dir.join("nodes/77_0").exists());
}

#[test]
fn a_fleet_records_into_postgresql_and_the_merge_job_reports_from_it() {
    let Some(store) = pg_support::fresh_database("fleet") else {
        return;
    };
    let fleet = Fleet::new();
    let out = fleet.script("stackbench.sbatch", Some(&store), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(fleet.files("incoming").is_empty(), "no file to merge");
    let labels: Vec<String> = pg_support::client(&store)
        .query("SELECT label FROM runs", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(labels, ["fleet-test/default/node-a"]);

    let out = fleet.script("merge.sbatch", Some(&store), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // The cross-hardware report, written from the store (the results directory holds no
    // run: every row in it came from PostgreSQL).
    let report = std::fs::read_to_string(fleet.results.join("reports/hardware.json"))
        .unwrap_or_else(|e| panic!("{e}\n{}", text(&out)));
    assert!(report.contains("gemm"), "{report}\n{}", text(&out));
    assert!(!fleet.results.join("runs").exists());
}
