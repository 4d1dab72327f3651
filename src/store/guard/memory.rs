//! Local memory: what this machine has seen of each store, in a small file per store,
//! written durably (a new file, flushed, renamed over the old) before a higher range or
//! mark is used. A store that comes back below it lost data.

use crate::store::StoreError;
use crate::sync::outside_loom::{lock, Mutex};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the files are; `None`: no local memory (the library's default).
static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Keeps what this process sees of every store it opens through a
/// [`StoreUrl`](crate::StoreUrl) in `dir` (one small file per store), or nothing with
/// `None`. The `uidgen` command and `uidgen serve` use `stores/` beside the embedded store's file
/// ([`default_store_memory_dir`](crate::default_store_memory_dir)).
///
/// With it, a store found below what this machine saw before (a restored dump, an older
/// SQLite file, a Redis that restarted empty) is caught even when no process that saw the
/// higher values is still running: a counter below is raised past it, a time mark below
/// is raised at acquire, and a store whose identity changed is refused.
pub fn remember_stores_in(dir: Option<PathBuf>) {
    *lock(&DIR) = dir;
}

/// What this machine remembers of one store.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Remembered {
    /// The store's identity when last seen.
    pub identity: Option<String>,
    /// (scope, tag) → the highest range end handed out.
    pub tags: BTreeMap<(String, String), u64>,
    /// (scope, worker ID) → the highest time mark recorded.
    pub marks: BTreeMap<(String, u64), u64>,
}

/// One store's file.
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    path: PathBuf,
    key: String,
    /// The folder was there when this process first looked: an earlier run of this
    /// machine kept memory in it.
    folder_was_there: bool,
}

impl Memory {
    /// The file for the store `key` (its description), if memory is on.
    pub(crate) fn for_store(key: &str) -> Option<Self> {
        let dir = lock(&DIR).clone()?;
        Some(Self {
            path: dir.join(format!("{:016x}.state", fnv1a(key.as_bytes()))),
            key: key.to_owned(),
            folder_was_there: dir.is_dir(),
        })
    }

    /// Whether an earlier run of this machine kept memory in the folder (of any store).
    pub(crate) fn folder_was_there(&self) -> bool {
        self.folder_was_there
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn failed(&self, problem: String, source: std::io::Error) -> StoreError {
        // Why, and what to do, for the faults an operator can mend.
        let advice = match source.kind() {
            std::io::ErrorKind::StorageFull => ": the disk is full; free space on it and run again",
            std::io::ErrorKind::ReadOnlyFilesystem => {
                ": the file system is read-only; make it writable (or point \
                 UIDGEN_STATE_DIR at a writable folder) and run again"
            }
            _ => "",
        };
        StoreError::File {
            path: self.path.clone(),
            problem: format!(
                "uidgen's memory of {}: {problem} ({source}){advice}",
                self.key
            ),
            source: Some(Box::new(source)),
        }
    }

    /// What the file holds (nothing if there is no file).
    pub(crate) fn read(&self) -> Result<Remembered, StoreError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => parse(&text).map_err(|line| StoreError::File {
                path: self.path.clone(),
                problem: format!(
                    "uidgen's memory of {}: line {line} is not one uidgen writes (a damaged \
                     file would lose the floors it keeps); fix or remove the line",
                    self.key
                ),
                source: None,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Remembered::default()),
            Err(e) => Err(self.failed("cannot read it".into(), e)),
        }
    }

    /// Reads, changes and durably writes the file, under a lock that other processes
    /// of this machine honour too.
    pub(crate) fn update(&self, change: impl FnOnce(&mut Remembered)) -> Result<(), StoreError> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| self.failed(format!("cannot create {}", dir.display()), e))?;
        }
        let lock_path = self.path.with_extension("lock");
        let lock_file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| self.failed(format!("cannot open {}", lock_path.display()), e))?;
        lock_file
            .lock()
            .map_err(|e| self.failed("cannot lock it".into(), e))?;
        let mut remembered = self.read()?;
        let before = remembered.clone();
        change(&mut remembered);
        if remembered == before {
            return Ok(());
        }
        let temporary = self.path.with_extension("new");
        let written = (|| {
            let mut file = std::fs::File::create(&temporary)?;
            file.write_all(render(&self.key, &remembered).as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temporary, &self.path)
        })();
        written.map_err(|e| self.failed("cannot write it".into(), e))
    }
}

/// The file's text: a line per fact, fields split by tabs (no tag or scope holds a
/// control character).
fn render(key: &str, remembered: &Remembered) -> String {
    let mut text = format!(
        "# uidgen's memory of one store: raise the store to these values, never lower them\n\
         store\t{key}\n"
    );
    if let Some(identity) = &remembered.identity {
        text.push_str(&format!("id\t{identity}\n"));
    }
    for ((scope, tag), end) in &remembered.tags {
        text.push_str(&format!("tag\t{scope}\t{tag}\t{end}\n"));
    }
    for ((scope, worker), mark) in &remembered.marks {
        text.push_str(&format!("mark\t{scope}\t{worker}\t{mark}\n"));
    }
    text
}

/// What the file says, or the number of the first line that is not one [`render`]
/// writes.
fn parse(text: &str) -> Result<Remembered, usize> {
    let mut remembered = Remembered::default();
    for (index, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        let bad = || index + 1;
        match fields.as_slice() {
            [comment] if comment.starts_with('#') || comment.is_empty() => {}
            ["store", _] => {}
            ["id", identity] => remembered.identity = Some((*identity).to_owned()),
            ["tag", scope, tag, end] => {
                let end = end.parse().map_err(|_| bad())?;
                remembered
                    .tags
                    .insert(((*scope).to_owned(), (*tag).to_owned()), end);
            }
            ["mark", scope, worker, mark] => {
                let (worker, mark) = (
                    worker.parse().map_err(|_| bad())?,
                    mark.parse().map_err(|_| bad())?,
                );
                remembered.marks.insert(((*scope).to_owned(), worker), mark);
            }
            _ => return Err(bad()),
        }
    }
    Ok(remembered)
}

/// FNV-1a: a file name per store that stays the same across processes and builds.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back() {
        let mut remembered = Remembered {
            identity: Some("0123abcd 1700000000000".into()),
            ..Remembered::default()
        };
        remembered
            .tags
            .insert(("leaf_alloc".into(), "order with spaces".into()), 5001);
        remembered.marks.insert(("WORKER_LEASE".into(), 7), 123_456);
        assert_eq!(parse(&render("the store", &remembered)), Ok(remembered));
        // A damaged line is refused, naming it, never skipped.
        assert_eq!(parse("store\tx\ntag\tdefault\tt\tmany\n"), Err(2));
        assert_eq!(parse("junk\n"), Err(1));
        assert_ne!(fnv1a(b"a"), fnv1a(b"b"));
    }
}
