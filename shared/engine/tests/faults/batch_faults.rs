//! A crash inside a batch of deliveries, on both adapters, with faults at each boundary of the
//! batched path alone and then in random sets:
//!
//! * the shop's orders placed four at a time and delivered in batches (`reserve_stock`'s
//!   deliveries share a transaction on the warehouse store, their outcomes recorded on the main
//!   store after it; `send_receipt` calls out, so it runs alone beside them): afterwards every
//!   order has its reservations exactly once and one receipt under its key;
//! * pings with two subscribers writing to the store that holds the deliveries (their outcomes
//!   commit in the batch's transaction): afterwards every ping has each effect exactly once.
//!
//! Every delivery ends handled.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use std::collections::BTreeMap;

use async_trait::async_trait;
use jadpo_application::{
    Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber,
};
use jadpo_core::Dialect;
use jadpo_engine::EngineSettings;
use jadpo_schema::migrate::{Ledger, Migration};
use jadpo_test_env::{Emit, Env, Kind, commit_retried, count_where, shop_orders_took_effect_once};
use serde_json::json;

const POINTS: &[&str] = jadpo_test_env::BATCH_FAULT_POINTS;

/// Runs per adapter: each point alone, then random sets.
const RUNS: usize = 300;

/// Orders placed per run, delivered together.
const ORDERS: usize = 4;

const EFFECTS: &str =
    "CREATE TABLE t_effects (ping TEXT NOT NULL, subscriber TEXT NOT NULL, n INTEGER NOT NULL)";

/// Writes one row for each ping it gets (a repeated effect shows as a second row).
struct Effect(&'static str);

#[async_trait]
impl Subscriber for Effect {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        let ping = event.payload["id"].as_str().unwrap_or_default().to_owned();
        let sql = "INSERT INTO t_effects (ping, subscriber, n) VALUES ($1, $2, 1)";
        ctx.tx().await?.execute(sql, &[ping.into(), self.0.into()]).await?;
        Ok(())
    }
}

fn pings() -> Application {
    let m = || vec![Migration::new(Ledger::Workflow, 5, "t", EFFECTS)];
    Application::builder("t")
        .store("main")
        .event("ping")
        .action("ping", "main", Emit("ping"))
        .subscriber("one", "ping", "main", RetryPolicy::default(), Effect("one"))
        .subscriber("two", "ping", "main", RetryPolicy::default(), Effect("two"))
        .migrations("main", Dialect::Sqlite, m())
        .migrations("main", Dialect::Postgres, m())
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// What a run places and checks.
#[derive(Debug, Clone, Copy)]
enum Scenario {
    /// The shop's orders: subscribers on two stores, one calling out.
    Shop,
    /// Pings: two subscribers writing to the deliveries' own store.
    SameStore,
}

/// Places the run's orders (or pings), each retried under its key until answered; returns
/// their ids.
async fn place(env: &Env, run: usize, scenario: Scenario) -> Result<Vec<String>, String> {
    let mut ids = Vec::new();
    for o in 0..ORDERS {
        let (action, body) = match scenario {
            Scenario::Shop => {
                let items = json!([{"sku": "A", "qty": 1}, {"sku": format!("S{o}"), "qty": 2}]);
                ("place_order", json!({"customer": "c1", "items": items}))
            }
            Scenario::SameStore => ("ping", json!({"id": format!("p{run}-{o}")})),
        };
        let key = format!("run{run}-order{o}");
        let answered = commit_retried(env, action, &body, &key, 4).await;
        ids.push(answered.ok_or_else(|| format!("lost: {action} {o} was never answered"))?);
    }
    Ok(ids)
}

async fn check_pings(env: &Env, pings: &[String]) -> Result<(), String> {
    for ping in pings {
        let sql = "SELECT count(*) AS n FROM t_effects WHERE ping = $1";
        match count_where(env, "main", sql, ping).await? {
            2 => {}
            0 => {
                let sql = "SELECT d.subscriber, d.status, d.attempts, d.enqueued_at IS NULL AS unsent, \
                    (SELECT count(*) FROM jadpo_handled_deliveries h WHERE h.delivery_id = d.id) AS records \
                    FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id \
                    WHERE o.payload LIKE $1";
                let like = format!("%{ping}%");
                let rows = env.store("main").query_once(sql, &[like.into()]).await;
                return Err(format!("lost: ping {ping} took no effect; its deliveries: {rows:?}"));
            }
            n => return Err(format!("ping {ping} took {n} effects, not 2 (one per subscriber)")),
        }
    }
    unhandled(env).await
}

async fn unhandled(env: &Env) -> Result<(), String> {
    let sql = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> $1";
    match count_where(env, "main", sql, "handled").await? {
        0 => Ok(()),
        n => Err(format!("{n} deliveries not handled")),
    }
}

async fn check(env: &Env, orders: &[String]) -> Result<(), String> {
    shop_orders_took_effect_once(env, orders, 2).await?;
    unhandled(env).await
}

/// One run; the errors the faults caused on the delivery side.
async fn one_run(
    env: &mut Env,
    run: usize,
    crash: &[&'static str],
    scenario: Scenario,
) -> Result<Vec<String>, String> {
    for point in crash {
        fail::cfg(*point, "1*return").map_err(|e| e.to_string())?;
    }
    let placed = place(env, run, scenario).await;
    let mut seen = env.settle_batched(16).await;
    for point in crash {
        fail::remove(point);
    }
    seen.extend(env.settle_batched(16).await);
    match scenario {
        Scenario::Shop => check(env, &placed?).await,
        Scenario::SameStore => check_pings(env, &placed?).await,
    }
    .map(|()| seen)
}

async fn adapter(kind: Kind, scenario: Scenario, rng: &mut fastrand::Rng) -> Vec<String> {
    let mut env = match scenario {
        Scenario::Shop => Env::shop(kind).await,
        Scenario::SameStore => Env::new(kind, pings(), EngineSettings::default()).await,
    };
    let alone = POINTS.iter().map(|p| vec![*p]);
    let runs = jadpo_test_env::sized(RUNS);
    let random = (POINTS.len()..runs)
        .map(|_| POINTS.iter().copied().filter(|_| rng.u8(..10) < 3).collect::<Vec<_>>());
    let mut failures = Vec::new();
    let mut fired: BTreeMap<&str, usize> = BTreeMap::new();
    for (run, crash) in alone.chain(random).enumerate() {
        match one_run(&mut env, run, &crash, scenario).await {
            Ok(seen) => {
                for p in POINTS.iter().filter(|p| seen.iter().any(|e| e.contains(*p))) {
                    *fired.entry(p).or_default() += 1;
                }
            }
            Err(e) => failures.push(format!("{kind:?} {scenario:?} run {run} at {crash:?}: {e}")),
        }
    }
    println!(
        "{kind:?} {scenario:?}: {runs} runs, {} lost or repeated; faults met in delivery {fired:?}",
        failures.len()
    );
    // Outcomes are recorded after the batch only where the deliveries live in another store.
    let expected = POINTS
        .iter()
        .filter(|p| p.starts_with("deliver.batch."))
        .filter(|p| matches!(scenario, Scenario::Shop) || **p != "deliver.batch.after_outcomes");
    for point in expected {
        if !fired.contains_key(point) {
            failures.push(format!("{kind:?} {scenario:?}: the fault at {point} never fired"));
        }
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_inside_a_batch_loses_nothing_and_repeats_nothing() {
    let scenario = fail::FailScenario::setup();
    // CRASH_SEED replays a failed run's sets.
    let seed = std::env::var("CRASH_SEED").ok().and_then(|s| s.parse().ok());
    let seed = seed.unwrap_or_else(|| fastrand::u64(..));
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut failures = Vec::new();
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let before = jadpo_engine::fault_points::snapshot();
        for scenario in [Scenario::Shop, Scenario::SameStore] {
            failures.extend(adapter(kind, scenario, &mut rng).await);
        }
        for point in jadpo_test_env::unfired(POINTS, &before) {
            failures.push(format!("{kind:?}: the fault at {point} never fired"));
        }
    }
    scenario.teardown();
    jadpo_test_env::no_failures(seed, &failures);
}
