//! `jadpo-local` as a user runs it: start, read the printed key, place an order over HTTP, see
//! the reservation land in the warehouse file, stop with Ctrl-C (SIGINT) or SIGTERM and exit
//! cleanly.

use crate::common;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{http, read_key, start_local};
use jadpo_core::{SystemClock, TransactionalStore};
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions};

fn post_order(port: u16, key: &str) -> String {
    let body = r#"{"customer": "c1", "items": [{"sku": "A", "qty": 3}]}"#;
    http(
        port,
        &format!(
            "POST /actions/place_order HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

async fn count(dir: &std::path::Path, store: &str, sql: &str) -> i64 {
    let location = SqliteLocation::File(dir.join(format!(".jadpo/{store}.db")));
    let store = Sqlite::open(store, &location, &SqliteOptions::default(), Arc::new(SystemClock))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let n = tx.query_one(sql, &[]).await;
    n.and_then(|r| r.get_i64("n")).unwrap_or(-1)
}

async fn reservations(dir: &std::path::Path) -> i64 {
    count(dir, "warehouse", "SELECT coalesce(sum(qty), 0) AS n FROM shop_reservations").await
}

#[tokio::test]
async fn an_order_placed_over_http_reaches_the_warehouse_and_ctrl_c_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut running = start_local(dir.path());
    let port = running.port;
    let key = read_key(&mut running);
    let response = post_order(port, &key);
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    let unauthorized = post_order(port, "jadpo_sk_nope");
    assert!(unauthorized.starts_with("HTTP/1.1 401"), "{unauthorized}");
    for path in ["/sink/mailer", "/", "/healthz"] {
        let wrong =
            http(port, &format!("DELETE {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assert!(
            wrong.starts_with("HTTP/1.1 405") && wrong.contains("application/problem+json"),
            "DELETE {path}: {wrong}"
        );
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while reservations(dir.path()).await != 3 {
        assert!(Instant::now() < deadline, "the reservation never arrived");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let sink = http(port, "GET /sink/mailer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        if sink.contains("\"order_id\"") {
            assert!(sink.contains("\"idempotency_key\":\""), "{sink}");
            break;
        }
        assert!(Instant::now() < deadline, "the receipt never reached the mailer sink: {sink}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The sinks a caller can make are bounded: past the limit another name answers 404.
    for n in 0..jadpo_local::sink::SINKS_KEPT {
        let get = format!("GET /sink/extra{n} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let _ = http(port, &get);
    }
    let refused = http(port, "GET /sink/one-more HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(
        refused.starts_with("HTTP/1.1 404") && refused.contains("at most 64 sinks"),
        "{refused}"
    );
    let kept = http(port, "GET /sink/mailer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(kept.starts_with("HTTP/1.1 200"), "an existing sink still answers: {kept}");
    // The schedule loop stored the shop's schedule at its first tick; housekeeping ran a pass at
    // start in each store.
    let stored = "SELECT count(*) AS n FROM jadpo_schedules WHERE name = 'sales_summary'";
    let swept = "SELECT count(*) AS n FROM jadpo_housekeeping WHERE last_completed_at IS NOT NULL";
    let deadline = Instant::now() + Duration::from_secs(20);
    while count(dir.path(), "main", stored).await != 1
        || count(dir.path(), "main", swept).await != 1
        || count(dir.path(), "warehouse", swept).await != 1
    {
        assert!(Instant::now() < deadline, "no schedule tick or housekeeping pass at start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop_with(&mut running, "-INT").await;
}

/// Asks `running` to stop with `signal` and waits until it has exited cleanly.
async fn stop_with(running: &mut common::Local, signal: &str) {
    let pid = running.child.id().to_string();
    let sent = Command::new("kill").args([signal, &pid]).status();
    assert!(sent.is_ok_and(|s| s.success()));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = running.child.try_wait() {
            assert!(status.success(), "jadpo-local exited with {status} on {signal}");
            return;
        }
        assert!(Instant::now() < deadline, "jadpo-local did not stop on {signal}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `kill`, `docker stop` and systemd send SIGTERM: the process stops as on Ctrl-C — drains the
/// queued deliveries (the local sink still answering them) and closes its SQLite files, so every
/// delivery is handled, the main file holds every write and no write-ahead log is left.
#[tokio::test]
async fn sigterm_stops_cleanly_and_leaves_no_write_ahead_log() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut running = common::start_local_logged(dir.path());
    let port = running.port;
    let key = read_key(&mut running);
    let mut log = running.child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
    let logged = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut log, &mut text);
        text
    });
    for _ in 0..20 {
        let response = post_order(port, &key);
        assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    }
    let wal = dir.path().join(".jadpo/main.db-wal");
    assert!(wal.exists(), "the running process writes through a write-ahead log");
    stop_with(&mut running, "-TERM").await;
    // The queued deliveries were drained while the sink standing in for the mailer still answered.
    let log = logged.join().unwrap_or_default();
    assert!(!log.contains("delivery attempt failed"), "draining failed deliveries: {log}");
    let pending = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> 'handled'";
    assert_eq!(count(dir.path(), "main", pending).await, 0, "a queued delivery was left: {log}");
    let left = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert_eq!(left, 0, "SIGTERM left {left} bytes of write-ahead log beside main.db");
    let orders = count(dir.path(), "main", "SELECT count(*) AS n FROM shop_orders").await;
    assert_eq!(orders, 20, "orders written before SIGTERM are in the main file");
}

/// The start-up hints name the database the process actually uses, not the default path.
#[tokio::test]
async fn the_start_up_hints_name_the_stores_it_uses() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let elsewhere = "sqlite://./elsewhere.db";
    let mut running = common::start_local_with(dir.path(), &[("DATABASE_URL", elsewhere)]);
    let hints: Vec<String> = running
        .stdout()
        .map_while(Result::ok)
        .take_while(|l| !l.starts_with("Ctrl-C"))
        .filter(|l| l.contains("DATABASE_URL="))
        .collect();
    assert_eq!(hints.len(), 3, "{hints:#?}");
    assert!(
        hints.iter().all(|h| h.contains("DATABASE_URL=sqlite://./elsewhere.db ")),
        "{hints:#?}"
    );
    stop_with(&mut running, "-TERM").await;
}

/// Each failed delivery attempt is logged — its delivery, subscriber, attempt and failure — not
/// only a circuit breaker's transitions: the mailer failing, the receipt's attempt is in the log.
#[tokio::test]
async fn a_failed_delivery_attempt_is_logged() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut running = common::start_local_logged(dir.path());
    let port = running.port;
    let key = read_key(&mut running);
    let stderr = running.child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
    let (lines, log) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let body = r#"{"fail": true}"#;
    let failing = http(
        port,
        &format!(
            "PUT /sink/mailer/mode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(failing.starts_with("HTTP/1.1 200"), "{failing}");
    assert!(post_order(port, &key).starts_with("HTTP/1.1 201"));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line =
            log.recv_timeout(left).unwrap_or_else(|_| panic!("no failed attempt was logged"));
        if line.contains("delivery attempt failed") {
            assert!(line.contains("send_receipt") && line.contains("attempt"), "{line}");
            assert!(
                !line.contains('\u{1b}'),
                "a log written to a pipe holds colour codes: {line:?}"
            );
            break;
        }
    }
    stop_with(&mut running, "-TERM").await;
}

/// An unknown `JADPO_LOG_FORMAT` stops the process at start, saying which values it takes.
#[test]
fn an_unknown_log_format_is_refused() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_jadpo-local"))
        .current_dir(dir.path())
        .env("JADPO_LOG_FORMAT", "jsno")
        .env("JADPO_LISTEN", "127.0.0.1:0")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("\"jsno\" is not a log format"), "{said}");
    assert!(!dir.path().join(".jadpo").exists(), "a refused start made its stores");
}

/// A database made by an older release — here the workflow store's tables of a release before
/// either migration ledger existed, holding a Session — is migrated by the local process when it
/// opens it: every migration is recorded, the old row is kept, and the shop works on it.
#[tokio::test]
async fn the_local_process_migrates_an_older_database_it_opens() {
    use jadpo_core::ports::MigrationStore;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(dir.path().join(".jadpo")).unwrap_or_else(|e| panic!("{e}"));
    let location = SqliteLocation::File(dir.path().join(".jadpo/main.db"));
    let store = Sqlite::open("main", &location, &SqliteOptions::default(), Arc::new(SystemClock))
        .unwrap_or_else(|e| panic!("{e}"));
    let v1 = store.migration_catalog().all().next().map(|m| m.sql.clone()).unwrap_or_default();
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.batch(&v1).await.unwrap_or_else(|e| panic!("{e}"));
    let old =
        "INSERT INTO sessions (id, user_id, created_at, updated_at) VALUES ('s-old', 'u', 0, 0)";
    tx.batch(old).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    drop(store);

    let mut running = start_local(dir.path());
    let port = running.port;
    let key = read_key(&mut running);
    let response = post_order(port, &key);
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    drop(running);
    let recorded = "SELECT count(*) AS n FROM jadpo_migrations WHERE ledger = 'jadpo'";
    let runtime =
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations/sqlite"))
            .map(|d| {
                d.filter(|e| {
                    e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sql"))
                })
                .count()
            })
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(count(dir.path(), "main", recorded).await, i64::try_from(runtime).unwrap_or(0));
    let spec = "SELECT count(*) AS n FROM invariant_schema_migrations";
    assert!(count(dir.path(), "main", spec).await >= 3, "the workflow store's versions");
    let kept = "SELECT count(*) AS n FROM sessions WHERE id = 's-old'";
    assert_eq!(count(dir.path(), "main", kept).await, 1, "the older database's Session was lost");
    let orders = count(dir.path(), "main", "SELECT count(*) AS n FROM shop_orders").await;
    assert_eq!(orders, 1);
}
