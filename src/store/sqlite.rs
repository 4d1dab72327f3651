//! The embedded store: a SQLite file, compiled in.

use super::StoreError;
use rusqlite::Connection;
use std::path::Path;
use std::time::Duration;

/// Refuses a path that is not a file another process can open too: an in-memory
/// database would give every process the same worker IDs, and so the same IDs.
pub(crate) fn check_path(path: &Path) -> Result<(), StoreError> {
    let text = path.to_string_lossy();
    let problem = if text.trim().is_empty() {
        "the path is empty; give a file path"
    } else if text == ":memory:" || text.starts_with("file:") {
        "in-memory databases and file: URIs are refused: each process would get its own \
         registry and hand out the same worker IDs; give a file path"
    } else {
        return Ok(());
    };
    Err(StoreError::File {
        path: path.to_owned(),
        problem: problem.into(),
        source: None,
    })
}

/// Opens (creating it and its folder if needed) the database file at `path`; another
/// process holding it is waited for up to `busy_timeout`.
pub(crate) fn open(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    check_path(path)?;
    let failed = |problem: String, source: super::Cause| StoreError::File {
        path: path.to_owned(),
        problem,
        source: Some(source),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| failed(format!("cannot create folder {}", dir.display()), e.into()))?;
    }
    let conn =
        Connection::open(path).map_err(|e| failed("cannot open the file".into(), e.into()))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| failed("cannot set the busy timeout".into(), e.into()))?;
    Ok(conn)
}

/// A failed statement on the embedded store at `path`.
pub(crate) fn failed(path: &Path, step: &str, source: rusqlite::Error) -> StoreError {
    StoreError::File {
        path: path.to_owned(),
        problem: format!("{step} failed"),
        source: Some(Box::new(source)),
    }
}
