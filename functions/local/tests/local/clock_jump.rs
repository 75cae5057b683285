//! The wall clock jumping under the real process: `jadpo-local` on its SQLite defaults runs under
//! libfaketime, whose offset the test rewrites in a file while the process takes orders — an
//! hour back (a host whose clock was corrected), then a month forward (a host resumed from a long
//! pause). Only the wall clock moves: the monotonic clock its timers run on does not, as with an
//! NTP step. Housekeeping and schedule ticks run every second meanwhile.
//!
//! Afterwards no order is lost or repeated, a retry across the backward jump replays its answer,
//! every delivery ended handled with one receipt per order, housekeeping left the order in flight
//! at the forward jump alone, and the one-minute schedule recorded the month's missed ticks as a
//! bounded number of rows instead of running each. Prints what it counted.
//!
//! Needs libfaketime (`make prereqs` installs Debian's `libfaketime`); fails saying so without it.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Local, read_key, start_local_with, try_http};
use jadpo_core::{Store, SystemClock};
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions};

/// libfaketime's library, where Debian's package puts it.
fn libfaketime() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib").ok().into_iter().flatten().flatten().find_map(|d| {
        let candidate = d.path().join("faketime/libfaketime.so.1");
        candidate.is_file().then_some(candidate)
    });
    found.unwrap_or_else(|| {
        panic!(
            "this test runs jadpo-local under libfaketime: run `make prereqs` (as root it \
             installs Debian's libfaketime), or `apt-get install libfaketime`"
        )
    })
}

/// Sets the process's wall-clock offset (libfaketime's form: `+0`, `-1h`, `+30d`), which it
/// reads at its next clock call.
async fn set_offset(file: &Path, offset: &str) {
    std::fs::write(file, offset).unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Places order `n`: its answer's status line and order id.
fn place(port: u16, key: &str, n: usize) -> (String, String) {
    let request = common::order_request(key, n);
    let answer = try_http(port, &request).unwrap_or_else(|| panic!("order {n}: no answer"));
    let id = common::order_id(&answer).unwrap_or_else(|| panic!("order {n}: {answer}"));
    (answer.lines().next().unwrap_or_default().to_owned(), id)
}

async fn count(store: &dyn Store, sql: &str) -> i64 {
    let rows = store.query_once(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows[0].get_i64("n").unwrap_or_else(|e| panic!("{e}"))
}

/// Waits until every delivery is handled.
async fn settled(main: &dyn Store, what: &str) {
    let unfinished = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> 'handled'";
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(main, unfinished).await > 0 {
        assert!(Instant::now() < deadline, "{what}: deliveries never finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn start(dir: &Path, offset_file: &Path) -> Local {
    let (library, offsets) = (libfaketime(), offset_file.display().to_string());
    start_local_with(
        dir,
        &[
            ("LD_PRELOAD", &library.display().to_string()),
            ("FAKETIME_TIMESTAMP_FILE", &offsets),
            // Read the offset at every call (its cache would let a jump land late).
            ("FAKETIME_NO_CACHE", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
            ("JADPO_HOUSEKEEPING_INTERVAL_SECS", "1"),
            ("JADPO_TICK_INTERVAL_SECS", "1"),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_process_survives_its_clock_jumping_back_then_forward() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let offsets = dir.path().join("faketime");
    std::fs::write(&offsets, "+0").unwrap_or_else(|e| panic!("{e}"));
    let mut local = start(dir.path(), &offsets);
    let key = read_key(&mut local);
    let port = local.port;
    let open = |name: &str| {
        let location = SqliteLocation::File(dir.path().join(format!(".jadpo/{name}.db")));
        let store =
            Sqlite::open("check", &location, &SqliteOptions::default(), Arc::new(SystemClock));
        store.unwrap_or_else(|e| panic!("{e}"))
    };
    let (main, warehouse) = (open("main"), open("warehouse"));
    let runs = "SELECT count(*) AS n FROM jadpo_schedule_runs";
    let ran = "SELECT count(*) AS n FROM jadpo_schedule_runs WHERE status = 'run'";

    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(place(port, &key, n).1);
    }
    settled(&main, "before the jumps").await;

    // An hour back: new orders, and a retry of an earlier one that replays its answer.
    set_offset(&offsets, "-1h").await;
    for n in 5..10 {
        ids.push(place(port, &key, n).1);
    }
    let (status, retried) = place(port, &key, 2);
    assert!(status.starts_with("HTTP/1.1 201"), "{status}");
    assert_eq!(retried, ids[2], "the retry across the backward jump was not replayed");
    settled(&main, "after the hour back").await;
    let earlier = "SELECT count(*) AS n FROM shop_orders \
                   WHERE created_at < (SELECT created_at FROM shop_orders WHERE customer = 'c0')";
    assert_eq!(count(&main, earlier).await, 5, "the process's clock did not go back");
    let runs_before = count(&main, runs).await;
    let ran_before = count(&main, ran).await;

    // A month forward, an order in flight as housekeeping and the ticks run.
    set_offset(&offsets, "+30d").await;
    ids.push(place(port, &key, 10).1);
    tokio::time::sleep(Duration::from_secs(3)).await;
    settled(&main, "after the month forward").await;

    let orders = count(&main, "SELECT count(*) AS n FROM shop_orders").await;
    let customers = count(&main, "SELECT count(DISTINCT customer) AS n FROM shop_orders").await;
    let reserved =
        count(&warehouse, "SELECT coalesce(sum(qty), 0) AS n FROM shop_reservations").await;
    let skipped = "SELECT count(*) AS n FROM jadpo_schedule_runs \
                   WHERE status = 'skipped' AND reason LIKE 'missed%'";
    let (skipped, runs_after, ran_after) =
        (count(&main, skipped).await, count(&main, runs).await, count(&main, ran).await);
    let mailed =
        common::http(port, "GET /sink/mailer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let keys = mailed.matches("\"idempotency_key\":").count();
    println!(
        "clock jumps under jadpo-local: 11 orders across an hour back and a month forward; \
         written {orders}, reserved {reserved}, receipts {keys}; schedule rows {runs_before} -> \
         {runs_after} ({ran_before} -> {ran_after} runs, {skipped} missed ticks skipped)"
    );
    assert_eq!((orders, customers), (11, 11), "lost or repeated orders");
    assert_eq!(reserved, 11, "lost or repeated reservations");
    assert_eq!(keys, 11, "one receipt per order: {mailed}");
    assert!(skipped > 0, "the month's missed ticks were not recorded as skipped");
    assert!(ran_after > ran_before, "the schedule did not run after the jump");
    assert!(runs_after - runs_before < 200, "the missed month was recorded tick by tick");
    let _ = local.child.kill();
}
