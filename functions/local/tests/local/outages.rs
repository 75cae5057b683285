//! Faults survived by the real process: `jadpo-local` over PostgreSQL (a server of the test's
//! own) takes a burst of orders from clients that retry with their `Idempotency-Key` until they
//! get an answer, while the database is crashed and restarted under it, and then the process
//! itself is killed (SIGKILL) mid-burst and started again on the same stores. Afterwards every
//! acknowledged order exists once with one reservation, no order exists twice, and every delivery
//! ended handled, each once. Prints the faults injected, the requests sent, the orders
//! acknowledged, lost and repeated. `JADPO_SOAK_ORDERS` sets the burst's size (`make soak`).

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Local, read_key, start_local_with, try_http};
use jadpo_core::TransactionalStore;
use jadpo_store_postgres::{PgOptions, Postgres};
use jadpo_test_harness::PgCluster;

/// Orders in the burst (more under `make soak`).
fn orders() -> usize {
    std::env::var("JADPO_SOAK_ORDERS").ok().and_then(|n| n.parse().ok()).unwrap_or(150)
}

/// Places order `n` until it is acknowledged (201, or the replay of its key): the order id, and
/// how many requests it took. Gives up after a minute.
fn place(port: &std::sync::atomic::AtomicU16, key: &str, n: usize) -> (Option<String>, usize) {
    let request = common::order_request(key, n);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut sent = 0;
    while Instant::now() < deadline {
        let port = port.load(std::sync::atomic::Ordering::SeqCst);
        sent += 1;
        if let Some(answer) = try_http(port, &request) {
            if answer.starts_with("HTTP/1.1 201") {
                return (common::order_id(&answer), sent);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (None, sent)
}

async fn count(url: &str, sql: &str) -> i64 {
    count_of(url, sql, &[]).await
}

async fn count_of(url: &str, sql: &str, params: &[jadpo_core::SqlValue]) -> i64 {
    let store = Postgres::connect("check", url, &PgOptions::default());
    let store = store.unwrap_or_else(|e| panic!("{e}"));
    let rows = store.query_once(sql, params).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows[0].get_i64("n").unwrap_or_else(|e| panic!("{e}"))
}

fn start(dir: &std::path::Path, main: &str, warehouse: &str, listen: &str) -> Local {
    start_local_with(
        dir,
        &[
            ("DATABASE_URL", main),
            ("DATABASE_URL_WAREHOUSE", warehouse),
            ("JADPO_LISTEN", listen),
            // A killed process's queued messages are sent again after this long.
            ("JADPO_REDELIVERY_AFTER_SECS", "3"),
            // A run whose lease could not be released (the database was down) is taken up
            // again after this long (120 s by default).
            ("JADPO_STEP_LEASE_SECS", "5"),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_survive_a_database_crash_and_a_killed_process() {
    let cluster = PgCluster::start();
    let (main, warehouse) = (cluster.create_database("main"), cluster.create_database("warehouse"));
    let durable =
        "SELECT CASE WHEN current_setting('synchronous_commit') = 'on' THEN 1 ELSE 0 END AS n";
    assert_eq!(count(&main, durable).await, 1, "the test bed's commits must survive its crash");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut local = start(dir.path(), &main, &warehouse, "127.0.0.1:0");
    let key = read_key(&mut local);
    let port = Arc::new(std::sync::atomic::AtomicU16::new(local.port));
    let total = orders();
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let client = {
        let (port, key, done) = (Arc::clone(&port), key.clone(), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut acknowledged = BTreeMap::new();
            let mut sent = 0;
            for n in 0..total {
                let (id, tries) = place(&port, &key, n);
                sent += tries;
                if let Some(id) = id {
                    acknowledged.insert(n, id);
                }
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            (acknowledged, sent)
        })
    };
    let reach = |share: usize| {
        let done = Arc::clone(&done);
        async move {
            while done.load(std::sync::atomic::Ordering::SeqCst) < total * share / 3 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    // A third of the way in, the database crashes and comes back two seconds later.
    reach(1).await;
    cluster.crash();
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.restart();
    // Two thirds in, the process is killed outright and started again on the same stores.
    reach(2).await;
    let _ = local.child.kill();
    let _ = local.child.wait();
    let listen = format!("127.0.0.1:{}", local.port);
    let mut again = start(dir.path(), &main, &warehouse, &listen);
    read_key(&mut again);
    let (acknowledged, sent) =
        tokio::task::spawn_blocking(move || client.join().unwrap_or_default())
            .await
            .unwrap_or_default();

    // Every delivery ends handled (the killed process's queue is resent by the relay).
    let unfinished = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> 'handled'";
    let deadline = Instant::now() + Duration::from_secs(90);
    while count(&main, unfinished).await > 0 {
        if Instant::now() > deadline {
            let store = Postgres::connect("check", &main, &PgOptions::default());
            let store = store.unwrap_or_else(|e| panic!("{e}"));
            let sql = "SELECT id, subscriber, status, attempts, enqueued_at::text AS e, \
                       next_attempt_at::text AS a, coalesce(last_failure, '') AS f \
                       FROM jadpo_deliveries WHERE status <> 'handled' LIMIT 10";
            let rows = store.query_once(sql, &[]).await.unwrap_or_default();
            let shown: Vec<String> = rows.iter().map(|r| format!("{:?}", r.values())).collect();
            panic!("deliveries never finished: {shown:#?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let orders_written = count(&main, "SELECT count(*) AS n FROM shop_orders").await;
    let distinct = count(&main, "SELECT count(DISTINCT customer) AS n FROM shop_orders").await;
    let reserved =
        count(&warehouse, "SELECT coalesce(sum(qty), 0) AS n FROM shop_reservations").await;
    let deliveries = count(&main, "SELECT count(*) AS n FROM jadpo_deliveries").await;
    let handled = count(&main, "SELECT count(*) AS n FROM jadpo_handled_deliveries").await
        + count(&warehouse, "SELECT count(*) AS n FROM jadpo_handled_deliveries").await;
    let mut lost = Vec::new();
    for id in acknowledged.values() {
        let one = "SELECT count(*) AS n FROM shop_orders WHERE id = $1";
        if count_of(&main, one, &[id.as_str().into()]).await != 1 {
            lost.push(id.clone());
        }
    }
    println!(
        "faults injected: 1 database crash and restart, 1 SIGKILL and restart; orders {total}, \
         requests sent {sent}, acknowledged {}, written {orders_written}, lost {}, repeated {}; \
         reserved {reserved}; deliveries {deliveries}, handled records {handled}",
        acknowledged.len(),
        lost.len(),
        orders_written - distinct
    );
    assert_eq!(acknowledged.len(), total, "a client gave up");
    assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
    assert_eq!(orders_written, distinct, "an order was written twice (one customer each)");
    assert_eq!(reserved, orders_written, "a reservation was lost or repeated");
    assert_eq!(handled, deliveries, "a delivery was handled other than once");
    let _ = again.child.kill();
}
