//! `DirBlobs`: files' bytes in a local directory (`./.jadpo/files/` for the local process), one
//! file per blob named by its file id.
//!
//! A blob is written whole or not at all: the bytes go to a temporary name in the same
//! directory, are synced, then linked to their id (a hard link, which fails if the id exists,
//! so a blob is never overwritten), and the directory is synced. A process killed mid-write
//! leaves only a temporary file, which no listing or read sees; a later `DirBlobs::open` removes
//! such leftovers once they are an hour old (a younger one may be another process's write in
//! progress). File ids are checked before any path is made, so an id can never
//! leave the directory.

use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use jadpo_core::model::file::id_ok as blob_id_ok;
use jadpo_core::ports::{BlobError, BlobInfo, Blobs};

/// Where a temporary write's name starts; never a file id (ids have no `.`).
const TEMP_PREFIX: &str = ".partial-";

/// How old a temporary write must be before `open` takes it for a killed process's leftover.
const LEFTOVER_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Whether directory entry `entry` is a temporary write older than [`LEFTOVER_AFTER`].
fn leftover(entry: &std::fs::DirEntry) -> bool {
    let temporary = entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX);
    let age = entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
    temporary && age.is_some_and(|age| age >= LEFTOVER_AFTER)
}

/// Blobs in a directory.
#[derive(Debug, Clone)]
pub struct DirBlobs {
    dir: PathBuf,
}

fn unavailable(what: &str, e: &std::io::Error) -> BlobError {
    BlobError::Unavailable(format!("{what}: {e}"))
}

impl DirBlobs {
    /// Blobs in `dir`, created if missing; leftovers of writes a killed process never finished
    /// (temporary files an hour old) are removed.
    pub fn open(dir: &Path) -> Result<Self, BlobError> {
        std::fs::create_dir_all(dir).map_err(|e| unavailable(&dir.display().to_string(), &e))?;
        let entries =
            std::fs::read_dir(dir).map_err(|e| unavailable(&dir.display().to_string(), &e))?;
        for entry in entries.filter_map(Result::ok).filter(leftover) {
            let _ = std::fs::remove_file(entry.path());
        }
        Ok(Self { dir: dir.to_owned() })
    }

    fn path(&self, id: &str) -> Result<PathBuf, BlobError> {
        if blob_id_ok(id) { Ok(self.dir.join(id)) } else { Err(BlobError::BadId(id.to_owned())) }
    }

    fn put_now(&self, id: &str, bytes: &[u8]) -> Result<(), BlobError> {
        let target = self.path(id)?;
        let temp = self.dir.join(format!("{TEMP_PREFIX}{id}-{}", std::process::id()));
        let written = (|| {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(bytes)?;
            file.sync_all()
        })();
        written.map_err(|e| unavailable("writing a blob", &e))?;
        let linked = std::fs::hard_link(&temp, &target);
        let _ = std::fs::remove_file(&temp);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(BlobError::Exists(id.to_owned()));
            }
            Err(e) => return Err(unavailable("storing a blob", &e)),
        }
        let dir = std::fs::File::open(&self.dir).and_then(|d| d.sync_all());
        dir.map_err(|e| unavailable("syncing the blob directory", &e))
    }

    fn list_now(&self, after: &str, limit: u32) -> Result<Vec<BlobInfo>, BlobError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| unavailable("listing blobs", &e))?;
        let mut ids: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| blob_id_ok(name) && name.as_str() > after)
            .collect();
        ids.sort_unstable();
        ids.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            let Ok(meta) = std::fs::metadata(self.dir.join(&id)) else { continue }; // deleted meanwhile
            let written_at = meta.modified().map(DateTime::<Utc>::from).unwrap_or_default();
            found.push(BlobInfo { id, size: meta.len(), written_at });
        }
        Ok(found)
    }
}

/// Runs `work` off the async threads (file I/O blocks).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BlobError> + Send + 'static,
) -> Result<T, BlobError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| BlobError::Unavailable(format!("blob I/O stopped: {e}")))?
}

#[async_trait]
impl Blobs for DirBlobs {
    async fn put(&self, id: &str, bytes: &[u8]) -> Result<(), BlobError> {
        let (blobs, id, bytes) = (self.clone(), id.to_owned(), bytes.to_vec());
        blocking(move || blobs.put_now(&id, &bytes)).await
    }

    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, BlobError> {
        let path = self.path(id)?;
        blocking(move || match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(unavailable("reading a blob", &e)),
        })
        .await
    }

    async fn delete(&self, id: &str) -> Result<bool, BlobError> {
        let path = self.path(id)?;
        blocking(move || match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(unavailable("deleting a blob", &e)),
        })
        .await
    }

    async fn list(&self, after: &str, limit: u32) -> Result<Vec<BlobInfo>, BlobError> {
        let (blobs, after) = (self.clone(), after.to_owned());
        blocking(move || blobs.list_now(&after, limit)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blobs() -> (tempfile::TempDir, DirBlobs) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let blobs = DirBlobs::open(&dir.path().join("files")).unwrap_or_else(|e| panic!("{e}"));
        (dir, blobs)
    }

    #[tokio::test]
    async fn a_blob_is_written_once_read_and_deleted() {
        let (_dir, blobs) = blobs();
        blobs.put("f_1", b"%PDF-1.7").await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(blobs.get("f_1").await.ok().flatten().as_deref(), Some(&b"%PDF-1.7"[..]));
        let again = blobs.put("f_1", b"other").await;
        assert!(matches!(again, Err(BlobError::Exists(_))), "{again:?}");
        assert_eq!(blobs.get("f_1").await.ok().flatten().as_deref(), Some(&b"%PDF-1.7"[..]));
        assert!(blobs.delete("f_1").await.unwrap_or_else(|e| panic!("{e}")));
        assert!(!blobs.delete("f_1").await.unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(blobs.get("f_1").await.ok().flatten(), None);
    }

    #[tokio::test]
    async fn an_id_that_is_not_a_file_id_never_becomes_a_path() {
        let (dir, blobs) = blobs();
        std::fs::write(dir.path().join("secret"), b"outside").unwrap_or_else(|e| panic!("{e}"));
        for id in ["../secret", "", ".partial-x", "a/b", "a.b"] {
            assert!(matches!(blobs.put(id, b"x").await, Err(BlobError::BadId(_))), "{id:?}");
            assert!(matches!(blobs.get(id).await, Err(BlobError::BadId(_))), "{id:?}");
            assert!(matches!(blobs.delete(id).await, Err(BlobError::BadId(_))), "{id:?}");
        }
        assert!(dir.path().join("secret").exists(), "a bad id reached outside the directory");
    }

    #[tokio::test]
    async fn a_write_cut_short_is_never_seen_and_is_cleaned_up() {
        let (dir, blobs) = blobs();
        let files = dir.path().join("files");
        // What a process killed mid-write leaves: a temporary file, never the blob; an older one
        // and one another process may still be writing.
        let (old, young) = (files.join(".partial-f_2-99"), files.join(".partial-f_3-98"));
        for temp in [&old, &young] {
            std::fs::write(temp, b"half").unwrap_or_else(|e| panic!("{e}"));
        }
        let hour_ago = std::time::SystemTime::now() - LEFTOVER_AFTER;
        let file = std::fs::File::options().write(true).open(&old);
        file.and_then(|f| f.set_modified(hour_ago)).unwrap_or_else(|e| panic!("{e}"));
        blobs.put("f_1", b"whole").await.unwrap_or_else(|e| panic!("{e}"));
        let listed = blobs.list("", 10).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(listed.iter().map(|b| b.id.as_str()).collect::<Vec<_>>(), ["f_1"]);
        assert_eq!(listed[0].size, 5);
        assert_eq!(blobs.get("f_2").await.ok().flatten(), None);
        DirBlobs::open(&files).unwrap_or_else(|e| panic!("{e}"));
        assert!(!old.exists(), "the leftover was kept");
        assert!(young.exists(), "a write that may be in progress was removed");
    }

    #[tokio::test]
    async fn a_listing_pages_in_id_order() {
        let (_dir, blobs) = blobs();
        for id in ["f_c", "f_a", "f_b", "f_d"] {
            blobs.put(id, id.as_bytes()).await.unwrap_or_else(|e| panic!("{e}"));
        }
        let page = |after: &'static str| {
            let blobs = blobs.clone();
            async move {
                let found = blobs.list(after, 2).await.unwrap_or_else(|e| panic!("{e}"));
                found.into_iter().map(|b| b.id).collect::<Vec<_>>()
            }
        };
        assert_eq!(page("").await, ["f_a", "f_b"]);
        assert_eq!(page("f_b").await, ["f_c", "f_d"]);
        assert!(page("f_d").await.is_empty());
    }
}
