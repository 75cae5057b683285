//! Benchmark: what the portable transaction seam costs over the bare driver.
//!
//! One-row insert transactions (BEGIN, INSERT with bound parameters, COMMIT), through the
//! `Transaction` handle and, in the same process and interleaved round by round, through the bare
//! driver (rusqlite; tokio-postgres on one connection). The ratio of medians is the number that
//! matters: these machines are noisy, so absolute times are reported only for context.
//! Run with `make bench`; it rewrites `BENCHMARKS.md` at the workspace root.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jadpo_core::{SqlValue, SystemClock, TransactionalStore};
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions};
use jadpo_test_harness::PgTestDb;

const ROUNDS: usize = 7;
const SQLITE_OPS: usize = 3_000;
const PG_OPS: usize = 600;
const DDL: &str = "CREATE TABLE bench_orders (id BIGINT PRIMARY KEY, customer TEXT NOT NULL, total BIGINT NOT NULL)";
const INSERT: &str = "INSERT INTO bench_orders (id, customer, total) VALUES ($1, $2, $3)";

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn micros_per_op(d: Duration, ops: usize) -> f64 {
    d.as_secs_f64() * 1e6 / ops as f64
}

struct Line {
    what: &'static str,
    ops: usize,
    seam: Duration,
    driver: Duration,
}

async fn sqlite() -> Result<Line, Box<dyn std::error::Error>> {
    let store = Sqlite::open(
        "main",
        &SqliteLocation::Memory,
        &SqliteOptions::default(),
        Arc::new(SystemClock),
    )?;
    let raw = rusqlite::Connection::open_in_memory()?;
    raw.execute_batch(&format!("PRAGMA foreign_keys = ON; {DDL}"))?;
    let mut tx = store.begin().await?;
    tx.batch(DDL).await?;
    tx.commit().await?;
    let (mut seam, mut driver) = (Vec::new(), Vec::new());
    let mut id = 0_i64;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..SQLITE_OPS {
            id += 1;
            let mut tx = store.begin().await?;
            tx.execute(INSERT, &[id.into(), "c-1".into(), SqlValue::Int(4200)]).await?;
            tx.commit().await?;
        }
        seam.push(start.elapsed());
        let start = Instant::now();
        for _ in 0..SQLITE_OPS {
            id += 1;
            raw.execute_batch("BEGIN IMMEDIATE")?;
            raw.prepare_cached(
                "INSERT INTO bench_orders (id, customer, total) VALUES (?1, ?2, ?3)",
            )?
            .execute(rusqlite::params![id, "c-1", 4200_i64])?;
            raw.execute_batch("COMMIT")?;
        }
        driver.push(start.elapsed());
    }
    Ok(Line {
        what: "SQLite (:memory:)",
        ops: SQLITE_OPS,
        seam: median(seam),
        driver: median(driver),
    })
}

async fn postgres() -> Result<Line, Box<dyn std::error::Error>> {
    let db = PgTestDb::migrated().await;
    let store = db.store();
    let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    client.batch_execute(DDL).await?;
    let raw_insert = client
        .prepare("INSERT INTO bench_orders (id, customer, total) VALUES ($1, $2, $3)")
        .await?;
    let (mut seam, mut driver) = (Vec::new(), Vec::new());
    let mut id = 0_i64;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..PG_OPS {
            id += 1;
            let mut tx = store.begin().await?;
            tx.execute(INSERT, &[id.into(), "c-1".into(), SqlValue::Int(4200)]).await?;
            tx.commit().await?;
        }
        seam.push(start.elapsed());
        let start = Instant::now();
        for _ in 0..PG_OPS {
            id += 1;
            client.batch_execute("BEGIN").await?;
            client.execute(&raw_insert, &[&id, &"c-1", &4200_i64]).await?;
            client.batch_execute("COMMIT").await?;
        }
        driver.push(start.elapsed());
    }
    Ok(Line {
        what: "PostgreSQL (throwaway cluster or DATABASE_URL)",
        ops: PG_OPS,
        seam: median(seam),
        driver: median(driver),
    })
}

fn report(lines: &[Line]) -> String {
    let mut out = String::from(
        "## The transaction seam\n\n`cargo bench -p jadpo-test-harness --bench seam`: one-row insert \
         transactions (BEGIN, INSERT with three bound parameters, COMMIT) through `Transaction` versus \
         the bare driver, interleaved round by round; median of 7 rounds.\n\n\
         | store | ops/round | seam µs/op | driver µs/op | seam / driver |\n|---|---|---|---|---|\n",
    );
    for l in lines {
        let (s, d) = (micros_per_op(l.seam, l.ops), micros_per_op(l.driver, l.ops));
        out.push_str(&format!("| {} | {} | {s:.1} | {d:.1} | {:.2}× |\n", l.what, l.ops, s / d));
    }
    out.push_str(
        "\nThe seam's extra cost is value conversion and, on PostgreSQL, the pool checkout; on \
         SQLite, the `$n` → `?n` rewrite and the connection mutex.\n",
    );
    out
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let lines = vec![sqlite().await?, postgres().await?];
    let text = report(&lines);
    print!("{text}");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/bench");
    std::fs::create_dir_all(dir)?;
    std::fs::write(format!("{dir}/seam.md"), &text)?;
    Ok(())
}
