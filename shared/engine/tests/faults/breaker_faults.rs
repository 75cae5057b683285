//! A crash at each boundary of the `mailer` connection's circuit breaker, on both adapters: before
//! and after the commit of the gate that lets a delivery through, holds it or makes it the probe,
//! and of the record of its result (which opens the breaker, or closes it and releases the held
//! deliveries), beside the delivery's own commit, its outcome and the relay's send; each alone,
//! then in random sets, each failing at one of its first four arrivals, armed either while the
//! mailer fails (the attempts that open the breaker) or once it answers again (the probe, the
//! close and the release of the held deliveries).
//!
//! Each run fails the mailer while six orders are placed and paid (five failures open the
//! breaker, the later receipts are held), then lets it answer and runs the pipeline until
//! nothing is left. A payment's subscriber is declared with `payments` and meets the mailer's
//! breaker at its second call, after the charge. However it crashed, afterwards: every order has
//! its reservations exactly once and one receipt under one key, one payment charged under one
//! key with its receipt under one key; every delivery is handled; nothing is held; the breaker
//! is closed. A held
//! delivery or a probe stranded by a crash would show as a delivery left unhandled or held.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use jadpo_core::model::breaker::State;
use jadpo_test_env::{
    Env, Kind, commit_retried, count_where, crash_loop_on_both, fails_after,
    shop_orders_took_effect_once,
};
use serde_json::json;

const POINTS: &[&str] = &[
    "breaker.before_admit_commit",
    "breaker.after_admit_commit",
    "breaker.before_settle_commit",
    "breaker.after_settle_commit",
    "deliver.after_subscriber_commit",
    "deliver.after_outcome",
    "relay.after_send",
];

/// Runs per adapter: each point alone, then random sets.
const RUNS: usize = 150;

/// Orders a run places while the mailer fails: one more than the breaker's five failures.
const ORDERS: usize = 6;

/// In the random sets a point fails at one of its first this-many arrivals.
const ARRIVALS: usize = 4;

/// The engine's warnings: where a fault whose error the engine logs and goes on from (a lost
/// record of an attempt on the breaker) shows that it fired.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<u8>>>);

impl Warnings {
    /// Starts collecting (once per process).
    fn install() -> Self {
        let warnings = Self::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(warnings.clone())
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false);
        subscriber.try_init().unwrap_or_else(|e| panic!("a tracing subscriber was set: {e}"));
        warnings
    }

    /// What was logged since the last call.
    fn take(&self) -> String {
        let mut bytes = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        String::from_utf8_lossy(&std::mem::take(&mut *bytes)).into_owned()
    }
}

impl std::io::Write for Warnings {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Warnings {
    type Writer = Self;

    fn make_writer(&'a self) -> Self {
        self.clone()
    }
}

/// Places the run's orders and asks to pay each, each retried under its key until answered;
/// returns the orders' ids.
async fn place(env: &Env, run: usize) -> Result<Vec<String>, String> {
    let mut ids = Vec::new();
    for o in 0..ORDERS {
        let items = json!([{"sku": "A", "qty": 1}, {"sku": format!("S{o}"), "qty": 2}]);
        let body = json!({"customer": "c1", "items": items});
        let key = format!("run{run}-order{o}");
        let answered = commit_retried(env, "place_order", &body, &key, POINTS.len() + 1).await;
        let id = answered.ok_or_else(|| format!("lost: order {o} was never answered"))?;
        let pay = json!({"order_id": id, "amount": 100 + o});
        let key = format!("run{run}-pay{o}");
        let paid = commit_retried(env, "pay_order", &pay, &key, POINTS.len() + 1).await;
        paid.ok_or_else(|| format!("lost: order {o}'s payment was never answered"))?;
        ids.push(id);
    }
    Ok(ids)
}

/// Each order paid once: one payment row, charged under one key, its receipt under one key.
async fn paid_once(env: &Env, orders: &[String]) -> Result<(), String> {
    let keys = |sink: &str, order: &str, receipt: bool| {
        let received = env.sinks.received(sink);
        let keys: std::collections::BTreeSet<String> = received
            .iter()
            .filter(|m| m["body"]["order_id"].as_str() == Some(order))
            .filter(|m| !receipt || m["body"]["charge_id"].is_string())
            .filter_map(|m| m["idempotency_key"].as_str().map(str::to_owned))
            .collect();
        keys.len()
    };
    for order in orders {
        let sql = "SELECT count(*) AS n FROM shop_payments WHERE order_id = $1";
        let rows = count_where(env, "main", sql, order).await?;
        let (charges, receipts) = (keys("payments", order, false), keys("mailer", order, true));
        if (rows, charges, receipts) != (1, 1, 1) {
            return Err(format!(
                "order {order}: {rows} payments, charged under {charges} keys, \
                 its payment receipt under {receipts}"
            ));
        }
    }
    Ok(())
}

/// What a run must leave: each order's effects once, nothing unhandled or held, the breaker
/// closed.
async fn check(env: &Env, orders: &[String]) -> Result<(), String> {
    shop_orders_took_effect_once(env, orders, 2).await?;
    paid_once(env, orders).await?;
    let sql = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> $1";
    let unhandled = count_where(env, "main", sql, "handled").await?;
    let sql = "SELECT count(*) AS n FROM jadpo_deliveries WHERE held_connection = $1";
    let held = count_where(env, "main", sql, "mailer").await?;
    if unhandled != 0 || held != 0 {
        return Err(format!("{unhandled} deliveries not handled, {held} held"));
    }
    let breakers = env.store("main").breakers_list().await.map_err(|e| e.to_string())?;
    match breakers.iter().find(|b| b.connection == "mailer") {
        Some(b) if b.state == State::Closed => Ok(()),
        other => Err(format!("the mailer's breaker did not close: {other:?}")),
    }
}

/// When a run's faults are armed: while the mailer fails (the attempts that open the breaker),
/// or once it answers again (the probe, the close and the release of the held deliveries).
#[derive(Debug, Clone, Copy)]
enum Phase {
    Failing,
    Recovering,
}

fn arm(crash: &[(&'static str, usize)]) -> Result<(), String> {
    for (point, k) in crash {
        fail::cfg(*point, &fails_after(*k)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One run with the points of `crash` failing at their given arrival from `phase` on; the
/// errors it saw.
async fn one_run(
    env: &mut Env,
    warnings: &Warnings,
    run: usize,
    (phase, crash): &(Phase, Vec<(&'static str, usize)>),
) -> Result<Vec<String>, String> {
    env.sinks.set_failing("mailer", true);
    if let Phase::Failing = phase {
        arm(crash)?;
    }
    let placed = place(env, run).await;
    let mut seen: Vec<String> =
        env.drain().await.into_iter().filter_map(Result::err).map(|e| e.to_string()).collect();
    let opened = env.store("main").breakers_list().await.map_err(|e| e.to_string())?;
    let opened = opened.iter().any(|b| b.state != State::Closed);
    env.sinks.set_failing("mailer", false);
    if let Phase::Recovering = phase {
        arm(crash)?;
    }
    seen.extend(env.settle().await);
    for (point, _) in crash {
        fail::remove(point);
    }
    seen.extend(env.settle().await);
    seen.push(warnings.take());
    if !opened && crash.is_empty() {
        return Err("the failing mailer never opened its breaker".to_owned());
    }
    check(env, &placed?).await.map(|()| seen)
}

async fn adapter(kind: Kind, warnings: &Warnings, mut rng: fastrand::Rng) -> Vec<String> {
    let mut env = Env::shop(kind).await;
    let phases = [Phase::Failing, Phase::Recovering];
    let alone = phases.into_iter().flat_map(|f| POINTS.iter().map(move |p| (f, vec![(*p, 0)])));
    let runs = jadpo_test_env::sized(RUNS);
    let random = (2 * POINTS.len()..runs).map(|_| {
        let mut set = Vec::new();
        for point in POINTS {
            if rng.u8(..10) < 3 {
                set.push((*point, rng.usize(..ARRIVALS)));
            }
        }
        (phases[rng.usize(..2)], set)
    });
    let (mut failures, mut fired) = (Vec::new(), BTreeMap::<&str, usize>::new());
    // A first run without faults shows the scenario opens and closes the breaker at all.
    let clean = (Phase::Failing, vec![]);
    for (run, crash) in std::iter::once(clean).chain(alone).chain(random).enumerate() {
        match one_run(&mut env, warnings, run, &crash).await {
            Ok(seen) => {
                for p in POINTS.iter().filter(|p| seen.iter().any(|e| e.contains(*p))) {
                    *fired.entry(p).or_default() += 1;
                }
            }
            Err(e) => failures.push(format!("{kind:?} run {run} at {crash:?}: {e}")),
        }
    }
    println!(
        "{kind:?}: {} runs, {} lost, repeated or stuck; faults met {fired:?}",
        runs + 1,
        failures.len()
    );
    for point in POINTS.iter().filter(|p| !fired.contains_key(*p)) {
        failures.push(format!("{kind:?}: the fault at {point} never fired"));
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_any_breaker_boundary_strands_no_delivery() {
    let warnings = Warnings::install();
    crash_loop_on_both(POINTS, |kind, rng| adapter(kind, &warnings, rng)).await;
}
