//! Atomic file writes: a temporary file in the destination's directory, fsync, rename.
//! A reader sees the old file or the new one, never half of one, and a crash mid-write
//! leaves at most a stray temporary file that no reader looks at.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors carry the path they concern.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct AtomicWriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Writes `bytes` to `path` atomically, creating the parent directory if needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AtomicWriteError> {
    let wrap = |source| AtomicWriteError {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(wrap)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(wrap)?;
    tmp.write_all(bytes).map_err(wrap)?;
    // The temporary file is created private (0600); runs and reports are shared files.
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(wrap)?;
    }
    tmp.as_file().sync_all().map_err(wrap)?;
    tmp.persist(path).map_err(|e| wrap(e.error))?;
    // The rename is durable only once the directory entry is: fsync the directory too.
    if let Ok(dir_handle) = std::fs::File::open(dir) {
        let _ = dir_handle.sync_all();
    }
    Ok(())
}

/// Serialises `value` as pretty JSON and writes it atomically.
pub fn write_json_atomic<T: serde::Serialize>(
    path: &Path,
    value: &T,
) -> Result<(), AtomicWriteError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| AtomicWriteError {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/run.json");
        write_atomic(&path, b"one").unwrap();
        write_json_atomic(&path, &serde_json::json!({"two": 2})).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("\"two\": 2")
        );
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn unwritable_directory_names_the_path() {
        let err = write_atomic(Path::new("/proc/stackbench-cannot/x.json"), b"x").unwrap_err();
        assert!(
            err.to_string().contains("/proc/stackbench-cannot/x.json"),
            "{err}"
        );
    }
}
