//! awa (the Rust PostgreSQL job queue on crates.io) in the shapes `make bench-peers` runs
//! Graphile Worker, pg-boss and Jadpo in, on the database `<postgres-url>` names:
//!
//! * `steady <seconds>`: 8 producers each inserting single jobs (one transaction each) for
//!   `<seconds>` while one client runs a no-op worker with 8 workers; jobs/s from the first insert
//!   to the last finish, insert-return -> worker-start percentiles.
//! * `drain <jobs>`: `<jobs>` no-op jobs inserted in batches of 1,000 with no client running,
//!   then drained by a client of 8 workers claiming up to `claim_batch_size` at once (its
//!   default); jobs/s of the drain alone.
//! * `idle <count>`: one producer inserting a job every 20 ms, each started before the next;
//!   insert-return -> start percentiles.
//!
//! Prints one JSON line. Run by scripts/bench-peers/run.py; its settings are awa's defaults but
//! for the worker count (the peers' 8) and the migration its client needs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use awa::model::{insert_many, migrations};
use awa::{Client, InsertOpts, JobArgs, JobContext, JobError, JobResult, QueueConfig, Worker};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::postgres::PgPoolOptions;

const QUEUE: &str = "bench";
const PRODUCERS: usize = 8;
const WORKERS: u32 = 8;

#[derive(Debug, Serialize, Deserialize, JobArgs)]
struct Noop {
    n: u64,
}

/// When each job started, and how many finished (and when the last did).
#[derive(Default)]
struct Seen {
    started: Mutex<HashMap<i64, Instant>>,
    finished: AtomicUsize,
    last: Mutex<Option<Instant>>,
}

struct NoopWorker(Arc<Seen>);

#[async_trait::async_trait]
impl Worker for NoopWorker {
    fn kind(&self) -> &'static str {
        "noop"
    }

    async fn perform(&self, ctx: &JobContext) -> Result<JobResult, JobError> {
        let at = Instant::now();
        self.0.started.lock().unwrap_or_else(|e| e.into_inner()).insert(ctx.job.id, at);
        *self.0.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(at);
        self.0.finished.fetch_add(1, Ordering::SeqCst);
        Ok(JobResult::Completed)
    }
}

fn opts() -> InsertOpts {
    InsertOpts { queue: QUEUE.into(), ..Default::default() }
}

async fn client(pool: &sqlx::PgPool, seen: &Arc<Seen>) -> Client {
    let config = QueueConfig { max_workers: WORKERS, ..QueueConfig::default() };
    let client = Client::builder(pool.clone())
        .queue(QUEUE, config)
        .register_worker(NoopWorker(Arc::clone(seen)))
        .build()
        .unwrap_or_else(|e| panic!("awa client: {e}"));
    client.start().await.unwrap_or_else(|e| panic!("awa start: {e}"));
    client
}

async fn wait_for(seen: &Seen, jobs: usize) {
    let give_up = Instant::now() + Duration::from_secs(600);
    while seen.finished.load(Ordering::SeqCst) < jobs {
        assert!(Instant::now() < give_up, "awa did not finish {jobs} jobs in 10 minutes");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn percentiles(added: &HashMap<i64, Instant>, seen: &Seen) -> (f64, f64) {
    let started = seen.started.lock().unwrap_or_else(|e| e.into_inner());
    let mut ms: Vec<f64> = added
        .iter()
        .filter_map(|(id, at)| started.get(id).map(|s| s.saturating_duration_since(*at)))
        .map(|d| d.as_secs_f64() * 1000.0)
        .collect();
    ms.sort_by(f64::total_cmp);
    let pick = |q: f64| ms.get(((ms.len().max(1) - 1) as f64 * q).round() as usize).copied();
    (pick(0.5).unwrap_or(f64::NAN), pick(0.99).unwrap_or(f64::NAN))
}

async fn steady(pool: &sqlx::PgPool, seconds: u64) -> serde_json::Value {
    let seen = Arc::new(Seen::default());
    let client = client(pool, &seen).await;
    let begin = Instant::now();
    let stop_at = begin + Duration::from_secs(seconds);
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut added = HashMap::new();
                let mut n = 0;
                while Instant::now() < stop_at {
                    let job = awa::model::insert_with(&pool, &Noop { n }, opts())
                        .await
                        .unwrap_or_else(|e| panic!("awa insert: {e}"));
                    added.insert(job.id, Instant::now());
                    n += 1;
                }
                added
            })
        })
        .collect();
    let mut added = HashMap::new();
    for p in producers {
        added.extend(p.await.unwrap_or_else(|e| panic!("a producer failed: {e}")));
    }
    wait_for(&seen, added.len()).await;
    let last = seen.last.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or(begin);
    client.shutdown(Duration::from_secs(5)).await;
    let (p50, p99) = percentiles(&added, &seen);
    let jobs = added.len();
    json!({"peer": "awa", "shape": "steady", "jobs": jobs,
           "jobs_per_s": jobs as f64 / (last - begin).as_secs_f64(),
           "p50_ms": p50, "p99_ms": p99})
}

async fn drain(pool: &sqlx::PgPool, jobs: usize) -> serde_json::Value {
    for from in (0..jobs).step_by(1000) {
        let params: Vec<_> = (from..jobs.min(from + 1000))
            .map(|n| {
                awa::model::insert::params_with(&Noop { n: n as u64 }, opts())
                    .unwrap_or_else(|e| panic!("awa params: {e}"))
            })
            .collect();
        insert_many(pool, &params).await.unwrap_or_else(|e| panic!("awa insert_many: {e}"));
    }
    let seen = Arc::new(Seen::default());
    let begin = Instant::now();
    let client = client(pool, &seen).await;
    wait_for(&seen, jobs).await;
    let last = seen.last.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or(begin);
    client.shutdown(Duration::from_secs(5)).await;
    json!({"peer": "awa", "shape": "drain", "jobs": jobs,
           "jobs_per_s": jobs as f64 / (last - begin).as_secs_f64()})
}

async fn idle(pool: &sqlx::PgPool, count: usize) -> serde_json::Value {
    let seen = Arc::new(Seen::default());
    let client = client(pool, &seen).await;
    let mut added = HashMap::new();
    // The first 20 warm the pool, as the other peers' idle shapes do.
    for n in 0..count + 20 {
        let job = awa::model::insert_with(pool, &Noop { n: n as u64 }, opts())
            .await
            .unwrap_or_else(|e| panic!("awa insert: {e}"));
        if n >= 20 {
            added.insert(job.id, Instant::now());
        }
        wait_for(&seen, n + 1).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.shutdown(Duration::from_secs(5)).await;
    let (p50, p99) = percentiles(&added, &seen);
    json!({"peer": "awa", "shape": "idle", "jobs": count, "p50_ms": p50, "p99_ms": p99})
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let usage = "usage: awa-peer-bench <postgres-url> (steady <seconds>|drain <jobs>|idle <count>)";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, shape, amount] = args.as_slice() else { panic!("{usage}") };
    let amount: u64 = amount.parse().unwrap_or_else(|_| panic!("{usage}"));
    let pool = PgPoolOptions::new()
        .max_connections(20)
        .connect(url)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
    migrations::run(&pool).await.unwrap_or_else(|e| panic!("awa migrations: {e}"));
    let line = match shape.as_str() {
        "steady" => steady(&pool, amount).await,
        "drain" => drain(&pool, amount as usize).await,
        "idle" => idle(&pool, amount as usize).await,
        _ => panic!("{usage}"),
    };
    println!("{line}");
}
