//! Backing up and restoring an SQLite database as files, so that neither can lose data.
//!
//! A database in WAL mode is up to three files: the main file, its `-wal` (commits not yet folded
//! into the main file) and its `-shm` (the WAL's index). Copying the main file alone loses what
//! the `-wal` holds, and a stale `-wal` left beside a restored main file would be replayed into
//! it. So:
//!
//! * [`backup`] writes a consistent, self-contained copy with `VACUUM INTO`, which reads one
//!   snapshot through SQLite (the live database keeps serving) and writes a single file;
//! * [`restore`] first makes sure no process has the database open (it takes SQLite's exclusive
//!   lock, which any open connection of another process blocks), keeps the failed database
//!   whole — main file, `-wal` and `-shm`, byte for byte, taken while that lock holds — in a
//!   directory of its own, removes the `-wal` and `-shm`, and only then puts the backup in place
//!   (written beside it and renamed, so a crash leaves the old or the new file, never half of
//!   one). When the failed database is gone or unreadable (its main file missing, or its header
//!   or schema page not SQLite's), which is what a restore is for, no lock can be taken on it:
//!   whatever remains of it is kept aside byte for byte and the restore goes on, saying so
//!   ([`Failed`]); that no process still has it open is then the operator's to make sure.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// Why a backup or a restore did not happen. Nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// The file to back up or to restore over does not exist.
    #[error("{0} does not exist")]
    Missing(PathBuf),
    /// The target of a backup, or the directory kept for the failed database, exists already.
    #[error("{0} exists already: choose another path (nothing is overwritten)")]
    Exists(PathBuf),
    /// The folder a backup is to be written in does not exist.
    #[error("the folder {} does not exist: create it first (mkdir -p {})", .0.display(), .0.display())]
    NoFolder(PathBuf),
    /// A process still has the database open.
    #[error(
        "{0} is open in another process: stop every writer (the local process, `jadpo` verbs) \
         before restoring"
    )]
    InUse(PathBuf),
    /// The backup is not an SQLite database, or not a whole one.
    #[error("{path} is not a sound SQLite database: {why}")]
    NotADatabase {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        why: String,
    },
    /// The failed database has SQLite's header but cannot be read or locked.
    #[error(
        "the database is unreadable ({0}) though its header is SQLite's: stop every process using \
         it, move its files (with -wal and -shm) aside yourself, then restore again"
    )]
    Unreadable(String),
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The file system failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FilesError + '_ {
    move |source| FilesError::Io { path: path.to_owned(), source }
}

/// `path` with `suffix` appended to its file name (`main.db` → `main.db-wal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The files a database is made of on disk: the main file, then `-wal` and `-shm` when present.
pub fn database_files(path: &Path) -> Vec<PathBuf> {
    let mut out = vec![path.to_owned()];
    out.extend(["-wal", "-shm"].map(|s| sibling(path, s)).into_iter().filter(|p| p.exists()));
    out
}

/// Writes a consistent copy of the database at `db` to `to`, a new file. Returns its size.
pub fn backup(db: &Path, to: &Path) -> Result<u64, FilesError> {
    if !db.exists() {
        return Err(FilesError::Missing(db.to_owned()));
    }
    if to.exists() {
        return Err(FilesError::Exists(to.to_owned()));
    }
    if let Some(folder) = to.parent().filter(|f| !f.as_os_str().is_empty() && !f.is_dir()) {
        return Err(FilesError::NoFolder(folder.to_owned()));
    }
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let target = to.to_str().ok_or_else(|| FilesError::NotADatabase {
        path: to.to_owned(),
        why: "the path is not UTF-8".to_owned(),
    })?;
    conn.execute("VACUUM INTO ?1", [target])?;
    Ok(std::fs::metadata(to).map_err(io(to))?.len())
}

/// What state the failed database was found in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed {
    /// It opened: kept whole under its exclusive lock.
    Whole,
    /// Its main file was gone: whatever `-wal`/`-shm` remained were kept.
    Missing,
    /// Its main file was not a readable database (what SQLite said): its files kept as found.
    Unreadable(String),
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The state the failed database was found in.
    pub failed: Failed,
    /// Where the failed database's files were kept, each as it was.
    pub kept: Vec<PathBuf>,
    /// The stale `-wal`/`-shm` removed from beside the restored file.
    pub removed: Vec<PathBuf>,
}

/// Replaces the database at `db` with the backup at `from`, keeping the failed database's files
/// whole in the new directory `keep` first. Refused, changing nothing, while another process has
/// `db` open or when the backup is not a sound database. A `db` that is missing or unreadable
/// is restored over, whatever remains of it kept in `keep` first.
pub fn restore(db: &Path, from: &Path, keep: &Path) -> Result<Restored, FilesError> {
    if !from.exists() {
        return Err(FilesError::Missing(from.to_owned()));
    }
    if keep.exists() {
        return Err(FilesError::Exists(keep.to_owned()));
    }
    check_sound(from)?;
    if let Some(folder) = db.parent().filter(|f| !f.as_os_str().is_empty() && !f.is_dir()) {
        return Err(FilesError::NoFolder(folder.to_owned()));
    }
    let staged = sibling(db, ".restoring");
    std::fs::copy(from, &staged).map_err(io(&staged))?;
    let found = match (db.exists(), sqlite_header(db)) {
        (false, _) => set_aside(db, keep).map(|kept| (Failed::Missing, kept)),
        (true, Err(why)) => set_aside(db, keep).map(|kept| (Failed::Unreadable(why), kept)),
        (true, Ok(())) => keep_failed(db, keep).map(|kept| (Failed::Whole, kept)),
    };
    let found = match found {
        Err(FilesError::Unreadable(why)) => {
            set_aside(db, keep).map(|kept| (Failed::Unreadable(why), kept))
        }
        other => other,
    };
    let (failed, kept) = match found {
        Ok(found) => found,
        Err(e) => {
            let _ = std::fs::remove_file(&staged);
            return Err(e);
        }
    };
    let mut removed = Vec::new();
    for stale in ["-wal", "-shm"].map(|s| sibling(db, s)) {
        if stale.exists() {
            std::fs::remove_file(&stale).map_err(io(&stale))?;
            removed.push(stale);
        }
    }
    std::fs::rename(&staged, db).map_err(io(db))?;
    Ok(Restored { failed, kept, removed })
}

/// Whether `db` starts with SQLite's header, read as plain bytes: a file that does not is set
/// aside before SQLite opens it (which could change its `-wal` and `-shm`).
fn sqlite_header(db: &Path) -> Result<(), String> {
    use std::io::Read;
    let mut head = [0_u8; 100];
    let read = std::fs::File::open(db).and_then(|mut f| f.read_exact(&mut head));
    match read {
        Ok(()) if head.starts_with(b"SQLite format 3\0") => Ok(()),
        Ok(()) => Err("its header is not SQLite's".to_owned()),
        Err(e) => Err(format!("its header cannot be read: {e}")),
    }
}

/// Copies whatever files of the database at `db` exist, byte for byte, into the new `keep`.
fn set_aside(db: &Path, keep: &Path) -> Result<Vec<PathBuf>, FilesError> {
    std::fs::create_dir_all(keep).map_err(io(keep))?;
    let mut kept = Vec::new();
    for file in database_files(db).into_iter().filter(|f| f.exists()) {
        let name = file.file_name().map(PathBuf::from).unwrap_or_default();
        let to = keep.join(name);
        std::fs::copy(&file, &to).map_err(io(&to))?;
        kept.push(to);
    }
    Ok(kept)
}

/// Runs SQLite's integrity check on a backup (read-only: the file is not changed).
fn check_sound(path: &Path) -> Result<(), FilesError> {
    let bad = |why: String| FilesError::NotADatabase { path: path.to_owned(), why };
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| bad(e.to_string()))?;
    let verdict: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| bad(e.to_string()))?;
    match verdict.as_str() {
        "ok" => Ok(()),
        other => Err(bad(other.to_owned())),
    }
}

/// Takes the database's exclusive lock (refused while any other process has it open), then,
/// under it, copies its files byte for byte into `keep`.
fn keep_failed(db: &Path, keep: &Path) -> Result<Vec<PathBuf>, FilesError> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    let in_use = |e: rusqlite::Error| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            FilesError::InUse(db.to_owned())
        }
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => {
            FilesError::Unreadable(e.to_string())
        }
        _ => FilesError::Sqlite(e),
    };
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE").map_err(in_use)?;
    conn.execute_batch("BEGIN EXCLUSIVE").map_err(in_use)?;
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get::<_, i64>(0))
        .map_err(in_use)?;
    std::fs::create_dir_all(keep).map_err(io(keep))?;
    let mut kept = Vec::new();
    for file in database_files(db) {
        let name = file.file_name().map(PathBuf::from).unwrap_or_default();
        let to = keep.join(name);
        std::fs::copy(&file, &to).map_err(io(&to))?;
        kept.push(to);
    }
    // Ending here lets SQLite fold the `-wal` into the main file on close: the copies are kept
    // as they were, and both are replaced next.
    conn.execute_batch("ROLLBACK")?;
    Ok(kept)
}

/// A lock a process holds on an SQLite database's files for as long as it lives: the proof that
/// it is the only local process using them ([`sole_lock`]).
pub struct SoleLock {
    _held: Connection,
}

impl std::fmt::Debug for SoleLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SoleLock")
    }
}

/// Takes the sole-user lock of the database at `db`: an exclusive transaction, never ended, on
/// the lock file `<db>.local-lock` beside it, which the operating system releases when the
/// process ends however it ends (a crash included). `None` when another live process holds it.
pub fn sole_lock(db: &Path) -> Result<Option<SoleLock>, FilesError> {
    let path = sibling(db, ".local-lock");
    let conn = Connection::open(&path)?;
    conn.busy_timeout(Duration::ZERO)?;
    match conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE") {
        Ok(()) => Ok(Some(SoleLock { _held: conn })),
        Err(e)
            if matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(FilesError::Sqlite(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sole_lock_is_held_once_and_freed_with_its_holder() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let db = dir.path().join("main.db");
        let first = sole_lock(&db).unwrap_or_else(|e| panic!("{e}"));
        assert!(first.is_some(), "a free lock is taken");
        let second = sole_lock(&db).unwrap_or_else(|e| panic!("{e}"));
        assert!(second.is_none(), "a held lock is not taken twice");
        drop(first);
        assert!(
            sole_lock(&db).unwrap_or_else(|e| panic!("{e}")).is_some(),
            "freed with its holder"
        );
    }
}
