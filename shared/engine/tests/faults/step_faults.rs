//! A crash at every boundary of a run with two changing calls — the commit of the request that
//! asks for it, the relay, the delivery, before and after each step is recorded, before and
//! after each call, before and after the subscriber's commit — first at each one alone, then at
//! random sets of them (each at the first or the second time it is reached), a thousand runs on
//! each adapter under `make soak` (a hundred in `make test`). However it crashes, once the client has retried and the queue has redelivered:
//! the payment provider and the mailer each acted once per order, under one key, and never saw
//! two different requests under one key; the order's payment is written exactly once. Prints
//! each adapter's runs, the requests each provider received and the keys they came under.

use std::collections::BTreeMap;

use jadpo_core::{Clock, Dialect, SqlValue};
use jadpo_engine::commit::commit_unsent;
use jadpo_engine::relay::enqueue_now;
use jadpo_test_env::{Env, Kind, request};
use serde_json::{Value, json};

const POINTS: &[&str] = jadpo_test_env::PIPELINE_FAULT_POINTS;

/// Runs per adapter: each point alone, then random sets up to this many.
const RUNS: usize = 1000;

/// How a point fails in a run: at the first time it is reached, or only at the second (the
/// mail's step, for the step points).
const WHEN: [&str; 2] = ["1*return", "1*off->1*return"];

/// In the random sets a point fails at one of its first this-many arrivals: the payment's or the
/// mail's call, a delivery's first attempt or its retry.
const ARRIVALS: usize = 4;

#[derive(Default)]
struct Tally {
    runs: usize,
    failures: Vec<String>,
    requests: BTreeMap<&'static str, usize>,
    keys: BTreeMap<&'static str, usize>,
}

async fn insert_order(env: &Env, order: &str) {
    let main = env.store("main");
    let items = json!([{"sku": "A", "qty": 1}]);
    let items = match main.dialect() {
        Dialect::Postgres => SqlValue::Json(items),
        Dialect::Sqlite => SqlValue::Text(items.to_string()),
    };
    let sql = "INSERT INTO shop_orders (id, customer, items, created_at) VALUES ($1, 'c1', $2, $3)";
    let params = [order.into(), items, env.clock.now().into()];
    main.execute_once(sql, &params).await.unwrap_or_else(|e| panic!("{e}"));
}

/// The client asks to pay with its idempotency key until it gets an answer: each one-shot fault
/// fails at most one request, so one more request than there are points always gets one.
async fn client(env: &Env, order: &str, n: usize) -> bool {
    for attempt in 0..=POINTS.len() {
        let mut asked = request("pay_order", json!({"order_id": order, "amount": 1250}));
        asked.idempotency_key = Some(format!("pay-{order}"));
        asked.request_id = format!("req-{n}-{attempt}");
        if let Ok(outcome) = commit_unsent(&env.engine, asked).await {
            enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
            return true;
        }
    }
    false
}

/// What one provider received for `order`: an error for two requests under one key or an
/// effect under more than one key; else how many requests and keys.
fn check_provider(env: &Env, sink: &str, order: &str) -> Result<(usize, usize), String> {
    let received = env.sinks.received(sink);
    let mine: Vec<&Value> =
        received.iter().filter(|m| m["body"]["order_id"].as_str() == Some(order)).collect();
    let mut by_key: BTreeMap<String, &Value> = BTreeMap::new();
    for m in &mine {
        let key = m["idempotency_key"].as_str().unwrap_or("(none)").to_owned();
        if let Some(first) = by_key.get(&key) {
            if first["body"] != m["body"] {
                return Err(format!("{sink}: two different requests under key {key}"));
            }
        }
        by_key.entry(key).or_insert(m);
    }
    match by_key.len() {
        1 => Ok((mine.len(), 1)),
        0 => Err(format!("lost: {sink} never received the order's request")),
        n => Err(format!("repeated: {sink} acted under {n} keys: {:?}", by_key.keys())),
    }
}

async fn one_run(
    env: &mut Env,
    n: usize,
    crash: &[(&'static str, String)],
) -> Result<[(usize, usize); 2], String> {
    let order = format!("o{n}");
    insert_order(env, &order).await;
    for (point, when) in crash {
        fail::cfg(*point, when.as_str()).map_err(|e| e.to_string())?;
    }
    let acknowledged = client(env, &order, n).await;
    env.settle().await;
    for (point, _) in crash {
        fail::remove(point);
    }
    env.settle().await;
    if !acknowledged {
        // More crashes in a row than there are points cannot happen with one-shot faults.
        return Err("lost: the client never got an answer".into());
    }
    let charges = check_provider(env, "payments", &order)?;
    let receipts = check_provider(env, "mailer", &order)?;
    let sql = "SELECT count(*) AS n FROM shop_payments WHERE order_id = $1";
    let rows = env.store("main").query_once(sql, &[order.as_str().into()]).await;
    let written = rows.map_err(|e| e.to_string())?.first().map_or(Ok(0), |r| r.get_i64("n"));
    match written.map_err(|e| e.to_string())? {
        1 => Ok([charges, receipts]),
        0 => Err("lost: the payment was never written".into()),
        k => Err(format!("repeated: the payment was written {k} times")),
    }
}

async fn adapter(kind: Kind, rng: &mut fastrand::Rng) -> Tally {
    let mut env = Env::shop(kind).await;
    let mut tally = Tally::default();
    let alone = POINTS.iter().map(|p| jadpo_test_env::alone(p, WHEN[0], "commit.after_commit"));
    let second =
        POINTS.iter().filter(|p| p.starts_with("steps.")).map(|p| vec![(*p, WHEN[1].to_owned())]);
    let fixed: Vec<_> = alone.chain(second).collect();
    let random: Vec<Vec<_>> = (fixed.len()..jadpo_test_env::sized(RUNS))
        .map(|_| {
            let chosen: Vec<_> = POINTS.iter().filter(|_| rng.u8(..10) < 2).collect();
            chosen
                .into_iter()
                .map(|p| (*p, jadpo_test_env::fails_after(rng.usize(..ARRIVALS))))
                .collect()
        })
        .collect();
    for (n, crash) in fixed.into_iter().chain(random).enumerate() {
        tally.runs += 1;
        match one_run(&mut env, n, &crash).await {
            Ok([charges, receipts]) => {
                for (sink, (requests, keys)) in [("payments", charges), ("mailer", receipts)] {
                    *tally.requests.entry(sink).or_default() += requests;
                    *tally.keys.entry(sink).or_default() += keys;
                }
            }
            Err(e) => tally.failures.push(format!("{kind:?} run {n} at {crash:?}: {e}")),
        }
    }
    println!(
        "{kind:?}: {} runs, {} lost or repeated; requests received {:?} under keys {:?}",
        tally.runs,
        tally.failures.len(),
        tally.requests,
        tally.keys
    );
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_calls_survive_a_crash_at_any_boundary() {
    jadpo_test_env::crash_loop_on_both(POINTS, |kind, mut rng| async move {
        adapter(kind, &mut rng).await.failures
    })
    .await;
}
