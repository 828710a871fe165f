//! Walks a Criterion directory for `benchmark.json` files and reads one baseline in parallel.

use super::model::{Estimates, RawBenchmarkJson, SampleFile, Throughput, parse_throughput};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum CriterionError {
    #[error(
        "Criterion directory {path} does not exist (run `cargo bench` first, or pass --criterion-dir)"
    )]
    Missing { path: PathBuf },
    #[error("cannot read Criterion directory {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds no Criterion benchmarks (no benchmark.json anywhere below it)")]
    Empty { path: PathBuf },
    #[error("baseline `{name}` not found in {path}; baselines there: {}", available.join(", "))]
    UnknownBaseline {
        name: String,
        path: PathBuf,
        available: Vec<String>,
    },
}

/// One benchmark of one baseline, with names from `benchmark.json`.
#[derive(Clone, Debug)]
pub struct CriterionBenchmark {
    pub id: String,
    pub group: String,
    pub function: Option<String>,
    pub value: Option<String>,
    pub throughput: Option<Throughput>,
    pub estimates: Option<Estimates>,
    pub samples: SampleFile,
    /// The baseline directory it was read from.
    pub path: PathBuf,
    /// Things the reader tolerated (an unknown throughput kind, unreadable estimates).
    pub notes: Vec<String>,
    /// Why this benchmark has no usable samples (`sample.json` unreadable, empty, zero,
    /// negative or not finite), naming the file; `samples` is then empty. The id is known
    /// from `benchmark.json`, so the run records it as failed by name instead of the reader
    /// dropping it (see [`crate::results::measured_only`]).
    pub unusable: Option<String>,
}

/// A benchmark the reader could not use, and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SkippedBenchmark {
    pub path: PathBuf,
    pub reason: String,
    /// The benchmark's full id when `benchmark.json` could be read: a verdict names the
    /// benchmark whose samples were unusable, not only the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct BaselineRead {
    pub benchmarks: Vec<CriterionBenchmark>,
    pub skipped: Vec<SkippedBenchmark>,
}

/// Every baseline directory (one holding `benchmark.json`) below `root`, keyed by baseline
/// name. stackbench's own sidecar folder is not Criterion's and is left out.
fn find_baseline_dirs(root: &Path) -> Result<BTreeMap<String, Vec<PathBuf>>, CriterionError> {
    if !root.is_dir() {
        return Err(CriterionError::Missing {
            path: root.to_path_buf(),
        });
    }
    // Breadth-first until there are enough independent subtrees to walk them on all cores:
    // on a tree of 10,000 benchmarks the walk is tens of thousands of read_dir calls.
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    let mut frontier = vec![root.to_path_buf()];
    while !frontier.is_empty() && frontier.len() < 64 {
        let mut next = Vec::new();
        for dir in frontier {
            visit(&dir, root, &mut found, &mut next)?;
        }
        frontier = next;
    }
    let walked = crate::files::parallel_map(&frontier, |dir| {
        let mut found = Vec::new();
        let mut stack = vec![dir.clone()];
        while let Some(dir) = stack.pop() {
            visit(&dir, root, &mut found, &mut stack)?;
        }
        Ok::<_, CriterionError>(found)
    });
    for part in walked {
        found.extend(part?);
    }
    let mut by_name: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for (name, dir) in found {
        by_name.entry(name).or_default().push(dir);
    }
    for dirs in by_name.values_mut() {
        dirs.sort();
    }
    Ok(by_name)
}

/// Reads one directory: a baseline directory (it holds `benchmark.json`) goes to `found`
/// under its name; otherwise its subdirectories go to `pending`. stackbench's own sidecar
/// folder at the root is not Criterion's and is left out.
fn visit(
    dir: &Path,
    root: &Path,
    found: &mut Vec<(String, PathBuf)>,
    pending: &mut Vec<PathBuf>,
) -> Result<(), CriterionError> {
    let entries = std::fs::read_dir(dir).map_err(|source| CriterionError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut children = Vec::new();
    let mut is_baseline = false;
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            children.push(entry.path());
        } else if entry.file_name() == "benchmark.json" {
            is_baseline = true;
        }
    }
    if is_baseline {
        // A baseline directory holds files only; nothing below it is another benchmark.
        if let Some(name) = dir.file_name().and_then(|n| n.to_str()) {
            found.push((name.to_string(), dir.to_path_buf()));
        }
        return Ok(());
    }
    let at_root = dir == root;
    for child in children {
        if at_root && child.file_name().is_some_and(|n| n == "stackbench") {
            continue;
        }
        // Most directories are baseline directories (`base/`, `new/`, ...): one stat of
        // their benchmark.json settles them without listing them (four system calls).
        if child.join("benchmark.json").is_file() {
            if let Some(name) = child.file_name().and_then(|n| n.to_str()) {
                found.push((name.to_string(), child));
            }
        } else {
            pending.push(child);
        }
    }
    Ok(())
}

/// One scan of a Criterion directory: every baseline and where its benchmarks live.
#[derive(Clone, Debug)]
pub struct CriterionTree {
    pub root: PathBuf,
    baselines: BTreeMap<String, Vec<PathBuf>>,
}

impl CriterionTree {
    /// Walks `root` once. Fails when it is missing, unreadable or holds no benchmark.
    pub fn scan(root: &Path) -> Result<Self, CriterionError> {
        let baselines = find_baseline_dirs(root)?;
        if baselines.is_empty() {
            return Err(CriterionError::Empty {
                path: root.to_path_buf(),
            });
        }
        Ok(CriterionTree {
            root: root.to_path_buf(),
            baselines,
        })
    }

    /// Baseline names with how many benchmarks each holds.
    pub fn baselines(&self) -> BTreeMap<String, usize> {
        self.baselines
            .iter()
            .map(|(k, v)| (k.clone(), v.len()))
            .collect()
    }

    pub fn has(&self, name: &str) -> bool {
        self.baselines.contains_key(name)
    }

    /// Reads baseline `name`. Benchmarks that cannot be read are skipped with their path
    /// and reason; the rest are returned sorted by id.
    pub fn read(&self, name: &str) -> Result<BaselineRead, CriterionError> {
        self.read_with(name, true)
    }

    /// As [`CriterionTree::read`]; `with_estimates: false` leaves Criterion's summary
    /// (`estimates.json`) unread, which a comparison does not need: verdicts come from the
    /// samples, and a third of the file reads is saved.
    pub fn read_with(
        &self,
        name: &str,
        with_estimates: bool,
    ) -> Result<BaselineRead, CriterionError> {
        let Some(dirs) = self.baselines.get(name) else {
            return Err(CriterionError::UnknownBaseline {
                name: name.to_string(),
                path: self.root.clone(),
                available: self.baselines.keys().cloned().collect(),
            });
        };
        let results = crate::files::parallel_map(dirs, |dir| read_one(dir, with_estimates));
        let mut read = BaselineRead::default();
        for result in results {
            match result {
                Ok(bench) => read.benchmarks.push(bench),
                Err(skip) => read.skipped.push(skip),
            }
        }
        read.benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(read)
    }
}

/// Baseline names present under `root`, with how many benchmarks each holds.
pub fn list_baselines(root: &Path) -> Result<BTreeMap<String, usize>, CriterionError> {
    Ok(CriterionTree::scan(root)?.baselines())
}

/// Reads baseline `name` under `root` (one scan, one read).
pub fn read_baseline(root: &Path, name: &str) -> Result<BaselineRead, CriterionError> {
    CriterionTree::scan(root)?.read(name)
}

thread_local! {
    /// One read buffer per reading thread, reused for every file.
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Reads a whole small file with open, read until end, close, into `buffer` (kept fully
/// initialised and only ever grown, so nothing is zeroed twice); returns its length.
/// `fs::read` and `File::read_to_end` also ask for the size (statx, lseek) to size a fresh
/// buffer; on a tree of 10,000 benchmarks the reader is bound by system calls.
fn read_small_file(path: &Path, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut filled = 0;
    loop {
        if buffer.len() - filled < 4096 {
            buffer.resize((buffer.len() * 2).max(16 * 1024), 0);
        }
        match file.read(&mut buffer[filled..]) {
            Ok(0) => return Ok(filled),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, SkippedBenchmark> {
    let skip = |reason: String| SkippedBenchmark {
        path: path.to_path_buf(),
        reason,
        id: None,
    };
    READ_BUFFER.with_borrow_mut(|bytes| {
        let len = read_small_file(path, bytes).map_err(|e| skip(format!("cannot read: {e}")))?;
        serde_json::from_slice(&bytes[..len]).map_err(|e| skip(format!("invalid JSON: {e}")))
    })
}

fn read_one(dir: &Path, with_estimates: bool) -> Result<CriterionBenchmark, SkippedBenchmark> {
    let raw: RawBenchmarkJson = read_json(&dir.join("benchmark.json"))?;
    let mut notes = Vec::new();
    let id = raw
        .full_id
        .clone()
        .or_else(|| raw.title.clone())
        .ok_or_else(|| SkippedBenchmark {
            id: None,
            path: dir.join("benchmark.json"),
            reason: "benchmark.json has neither full_id nor title".into(),
        })?;
    let (samples, unusable) = read_samples(&dir.join("sample.json"));
    let throughput = match raw.throughput.as_ref().map(parse_throughput) {
        None | Some(Ok(None)) => None,
        Some(Ok(Some(t))) => Some(t),
        Some(Err(text)) => {
            notes.push(format!("unknown throughput kind {text} ignored"));
            None
        }
    };
    // Estimates are Criterion's summary; the verdict is recomputed from the samples, so a
    // damaged estimates.json costs only the copy kept for reference.
    let estimates =
        match with_estimates.then(|| read_json::<Estimates>(&dir.join("estimates.json"))) {
            None => None,
            Some(Ok(e)) => Some(e),
            Some(Err(skip)) => {
                notes.push(format!("{}: {}", skip.path.display(), skip.reason));
                None
            }
        };
    Ok(CriterionBenchmark {
        group: raw.group_id.clone().unwrap_or_else(|| id.clone()),
        function: raw.function_id.clone(),
        value: raw.value_str.clone(),
        id,
        throughput,
        estimates,
        samples,
        path: dir.to_path_buf(),
        notes,
        unusable,
    })
}

/// The samples of `path`, or none and why they cannot be used: the file is unreadable or
/// not JSON of the expected shape, or its samples fail [`SampleFile::usable`].
fn read_samples(path: &Path) -> (SampleFile, Option<String>) {
    let empty = || SampleFile {
        sampling_mode: None,
        iters: Vec::new(),
        times: Vec::new(),
    };
    match read_json::<SampleFile>(path) {
        Err(skip) => (
            empty(),
            Some(format!("{}: {}", path.display(), skip.reason)),
        ),
        Ok(samples) => match samples.usable() {
            Err(defect) => (empty(), Some(format!("{}: {defect}", path.display()))),
            Ok(_) => (samples, None),
        },
    }
}
