//! Group commit under kills: a process commits from many tasks at once (so their transactions
//! share commits) and prints each id whose commit returned; it is killed (`SIGKILL`) at a random
//! moment, hundreds of times. Every id it printed must be in the file afterwards: a commit never
//! returns before the shared `COMMIT` that holds it.
//!
//! The test runs this same binary as the child (`JADPO_GROUP_CHILD` names the database).

use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jadpo_core::{SqlValue, SystemClock, TransactionalStore};
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions, SqliteStore};

const RUNS: usize = 300;
const TASKS: usize = 16;
const CHILD: &str = "JADPO_GROUP_CHILD";

fn open(path: &Path) -> SqliteStore {
    let location = SqliteLocation::File(path.to_owned());
    let store = Sqlite::open("main", &location, &SqliteOptions::default(), Arc::new(SystemClock));
    store.unwrap_or_else(|e| panic!("{e}"))
}

/// The child: commits forever from `TASKS` tasks, printing each committed id.
async fn commit_forever(path: &Path) {
    let store = Arc::new(open(path));
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for n in 0.. {
                    let id = format!("{}-{task}-{n}", std::process::id());
                    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
                    let sql = "INSERT INTO items (id) VALUES ($1)";
                    tx.execute(sql, &[SqlValue::from(id.as_str())])
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    tokio::task::yield_now().await;
                    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{id}");
                    let _ = out.flush();
                }
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}

/// A pseudo-random number from the clock (no generator crate needed for kill timings).
fn jitter(bound: u64) -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(7);
    u64::from(nanos.wrapping_mul(2_654_435_761)) % bound
}

/// Starts the child, lets it commit for a random while, kills it; returns the ids it printed.
fn run_and_kill(path: &Path) -> Vec<String> {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "group_commit_crash::kills_lose_no_commit_that_returned",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the child: {e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stdout).read_to_string(&mut text);
        // Only whole lines: the kill may cut the last one short. The harness's own
        // "test … ..." prefix shares the first line.
        let whole = text.rsplit_once('\n').map_or("", |(whole, _)| whole);
        whole
            .lines()
            .filter_map(|l| l.rsplit(' ').next())
            .filter(|id| id.contains('-'))
            .map(str::to_owned)
            .collect()
    });
    std::thread::sleep(Duration::from_millis(20 + jitter(60)));
    let _ = child.kill();
    let _ = child.wait();
    reader.join().unwrap_or_else(|_| panic!("the reader panicked"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_lose_no_commit_that_returned() {
    if let Some(path) = std::env::var_os(CHILD) {
        commit_forever(Path::new(&path)).await;
        return;
    }
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("main.db");
    let create = open(&path).execute_once("CREATE TABLE items (id TEXT PRIMARY KEY)", &[]).await;
    create.unwrap_or_else(|e| panic!("{e}"));
    let (started, mut acknowledged, mut lost) = (Instant::now(), 0, Vec::new());
    let runs = jadpo_test_harness::sized(RUNS);
    for _ in 0..runs {
        let printed = run_and_kill(&path);
        acknowledged += printed.len();
        let store = open(&path);
        for id in printed {
            let params = [SqlValue::from(id.as_str())];
            let rows = store.query_once("SELECT count(*) AS n FROM items WHERE id = $1", &params);
            let n =
                rows.await.unwrap_or_else(|e| panic!("{e}"))[0].get_i64("n").unwrap_or_default();
            if n != 1 {
                lost.push(id);
            }
        }
    }
    let rows = open(&path).query_once("SELECT count(*) AS n FROM items", &[]).await;
    let stored = rows.unwrap_or_else(|e| panic!("{e}"))[0].get_i64("n").unwrap_or_default();
    println!(
        "group commit under kills: {runs} runs in {:.1} s, {acknowledged} commits returned, \
         {stored} rows stored, lost {}",
        started.elapsed().as_secs_f64(),
        lost.len()
    );
    assert!(acknowledged > runs, "the children committed almost nothing ({acknowledged})");
    assert!(lost.is_empty(), "commits that returned but are not stored: {lost:?}");
}
