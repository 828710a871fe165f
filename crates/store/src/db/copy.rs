//! `analyze-trends store copy FROM TO`: moves a store between engines (or between two
//! stores of one engine) through the store API alone, so whatever one engine can hold the
//! other receives the same. Runs keep their ids (an already present run is skipped, so a
//! copy interrupted half-way is finished by running it again); comparisons and
//! acknowledgements have no id of their own outside a store, so one already present with
//! the same content is skipped. Then the copy is verified: every source run is in the
//! target with the same content checksum, and every comparison and acknowledgement is there.

use super::{
    Acknowledgement, ComparisonRecord, DbError, HistoryDb, Inserted, StoreUrl, content_sha256,
};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// What a copy did and what it verified.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CopyReport {
    pub runs_copied: u64,
    pub runs_already_present: u64,
    pub comparisons_copied: u64,
    pub comparisons_already_present: u64,
    pub acknowledgements_copied: u64,
    pub acknowledgements_already_present: u64,
    /// Source runs found in the target with an equal content checksum.
    pub runs_verified: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("copying {from} to {to}: {detail}")]
    Mismatch {
        from: String,
        to: String,
        detail: String,
    },
    #[error("copying {from} to {to}: both name the same store")]
    SameStore { from: String, to: String },
}

type ComparisonKey = (u64, String, String, String, String, String);

fn comparison_key(c: &ComparisonRecord) -> ComparisonKey {
    (
        c.created_unix_ms,
        c.kind.clone(),
        c.baseline.clone(),
        c.candidate.clone(),
        c.verdict.clone(),
        c.detail_json.clone(),
    )
}

fn ack_key(a: &Acknowledgement) -> (String, String, String, String, u64) {
    (
        a.bench_id.clone(),
        a.run_id.clone(),
        a.reason.clone(),
        a.who.clone(),
        a.created_unix_ms,
    )
}

/// Copies every run, comparison and acknowledgement of `from` into `to` (created when
/// empty), then verifies the target by counts and per-run checksums.
pub fn copy_store(from: &StoreUrl, to: &StoreUrl) -> Result<CopyReport, CopyError> {
    if from == to {
        return Err(CopyError::SameStore {
            from: from.to_string(),
            to: to.to_string(),
        });
    }
    let source = HistoryDb::open_url(from)?;
    let mut target = HistoryDb::open_url(to)?;
    let mut report = CopyReport::default();
    let checksums = copy_runs(&source, &mut target, &mut report)?;
    let mut comparisons = source.comparisons()?;
    // Oldest first, so the target's ids grow in the source's order.
    comparisons.reverse();
    (
        report.comparisons_copied,
        report.comparisons_already_present,
    ) = copy_absent(&comparisons, &target.comparisons()?, comparison_key, |c| {
        target.record_comparison(c).map(drop)
    })?;
    (
        report.acknowledgements_copied,
        report.acknowledgements_already_present,
    ) = copy_absent(
        &source.acknowledgements()?,
        &target.acknowledgements()?,
        ack_key,
        |a| target.acknowledge(a),
    )?;
    verify(&source, &target, &checksums, &mut report).map_err(|detail| CopyError::Mismatch {
        from: from.to_string(),
        to: to.to_string(),
        detail,
    })?;
    Ok(report)
}

/// Copies the runs, oldest first; returns each source run's checksum.
fn copy_runs(
    source: &HistoryDb,
    target: &mut HistoryDb,
    report: &mut CopyReport,
) -> Result<HashMap<String, String>, DbError> {
    let mut checksums = HashMap::new();
    // One run in memory at a time: a large store does not fit whole.
    for (id, _) in source.run_ids()? {
        // An unreadable source run stops the copy: a copy that skips it is not a copy.
        let Some(run) = source.load_run(&id)? else {
            // Pruned while the copy ran: nothing to copy, nothing to verify.
            continue;
        };
        checksums.insert(run.run_id.clone(), content_sha256(&run));
        match target.insert_run(&run)? {
            Inserted::New => report.runs_copied += 1,
            Inserted::AlreadyPresent => report.runs_already_present += 1,
        }
    }
    Ok(checksums)
}

/// The items of `source` that `target` lacks, compared by `key`: comparisons and
/// acknowledgements have no id of their own outside a store.
fn absent_from<'s, T, K: Hash + Eq>(target: &[T], source: &'s [T], key: fn(&T) -> K) -> Vec<&'s T> {
    let present: HashSet<K> = target.iter().map(key).collect();
    source
        .iter()
        .filter(|item| !present.contains(&key(item)))
        .collect()
}

/// Inserts the items of `source` that `target` lacks, in `source`'s order; (copied,
/// already present).
fn copy_absent<T, K: Hash + Eq>(
    source: &[T],
    target: &[T],
    key: fn(&T) -> K,
    mut insert: impl FnMut(&T) -> Result<(), DbError>,
) -> Result<(u64, u64), DbError> {
    let missing = absent_from(target, source, key);
    for item in &missing {
        insert(item)?;
    }
    Ok((missing.len() as u64, (source.len() - missing.len()) as u64))
}

/// Every source run in the target, read back with the same checksum (and the target's
/// stored checksum, where it has one, agreeing); every comparison and acknowledgement there.
fn verify(
    source: &HistoryDb,
    target: &HistoryDb,
    checksums: &HashMap<String, String>,
    report: &mut CopyReport,
) -> Result<(), String> {
    let db = |e: DbError| e.to_string();
    let stored: HashMap<String, Option<String>> =
        target.stored_checksums().map_err(db)?.into_iter().collect();
    let mut ids: Vec<&String> = checksums.keys().collect();
    ids.sort();
    for id in ids {
        let expected = &checksums[id];
        let Some(run) = target.load_run(id).map_err(db)? else {
            return Err(format!("run {id} is missing from the target"));
        };
        let actual = content_sha256(&run);
        if &actual != expected {
            return Err(format!(
                "run {id} reads back with checksum {actual}, the source's is {expected}"
            ));
        }
        if let Some(Some(kept)) = stored.get(id)
            && kept != expected
        {
            return Err(format!(
                "run {id}: the target stores checksum {kept}, the source's is {expected}"
            ));
        }
        report.runs_verified += 1;
    }
    let all = source.comparisons().map_err(db)?;
    let missing = absent_from(&target.comparisons().map_err(db)?, &all, comparison_key);
    missing_none(missing.len(), all.len(), "comparisons")?;
    let all = source.acknowledgements().map_err(db)?;
    let missing = absent_from(&target.acknowledgements().map_err(db)?, &all, ack_key);
    missing_none(missing.len(), all.len(), "acknowledgements")
}

/// An error unless none of the source's `total` `what` is missing from the target.
fn missing_none(missing: usize, total: usize, what: &str) -> Result<(), String> {
    if missing > 0 {
        return Err(format!(
            "{missing} of {total} {what} are missing from the target"
        ));
    }
    Ok(())
}
