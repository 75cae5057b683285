//! The console in a real browser: headless Chromium (Debian's `chromium` and `chromium-driver`,
//! which `make test` installs) driven over WebDriver against the console served on a real port
//! over the sample shop. An operator signs in by the login link, reads the overview, finds the
//! receipt that died while the mailer sink was failing, retries it and sees it handled; cancels a
//! checkout run and watches its timeline reach `cancelled`; pauses and resumes the sales
//! schedule; and finds each change in the operator actions log under their name. The pages are
//! saved as screenshots under `target/screenshots/`; with `JADPO_BLESS=1` they are also copied
//! to `docs/img/`, which `docs/console.md` shows (a run never rewrites tracked files unasked).
//!
//! Time is the test environment's manual clock, so the receipt spends its attempts and the
//! run's compensations finish in moments rather than minutes.

use std::path::PathBuf;

use jadpo_console::{ConsoleSettings, console};
use jadpo_core::model::delivery::{DeliveryQuery, DeliveryStatus};
use jadpo_core::model::operator::ActionFilter;
use jadpo_engine::operate::Operator;
use jadpo_engine::workflow::runs::start_run;
use jadpo_test_env::{Env, Kind, commit_and_enqueue, request};
use jadpo_test_harness::Browser;
use serde_json::json;

const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Where a screenshot is written: under the build's `target/`, never a tracked file.
fn shot(name: &str) -> PathBuf {
    let dir = PathBuf::from(WORKSPACE).join("target/screenshots");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir.join(name)
}

/// With `JADPO_BLESS=1`, the screenshots become the documentation's (`docs/img/`).
fn bless(names: &[&str]) {
    if std::env::var("JADPO_BLESS").is_ok_and(|v| v == "1") {
        for name in names {
            let to = PathBuf::from(WORKSPACE).join("docs/img").join(name);
            std::fs::copy(shot(name), &to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
        }
    }
}

/// The one dead delivery of the main store.
async fn dead_receipt(env: &Env) -> String {
    let query =
        DeliveryQuery { status: Some(DeliveryStatus::Dead), limit: 10, ..Default::default() };
    let dead = env.store("main").deliveries_page(&query).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dead.len(), 1, "one receipt died while the mailer failed: {dead:?}");
    assert_eq!(dead[0].subscriber, "send_receipt");
    dead[0].id.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_works_the_console_in_a_real_browser() {
    let mut env = Env::shop(Kind::Sqlite).await;
    // A receipt the failing mailer kills, and a checkout run that waits for its shipment.
    env.sinks.set_failing("mailer", true);
    let order = json!({"customer": "c-17", "items": [{"sku": "A", "qty": 2}]});
    commit_and_enqueue(&env, request("place_order", order)).await;
    let input = json!({"order_id": "o-17"});
    let run = start_run(&env.engine, "checkout", input, None, None).await;
    let run = run.unwrap_or_else(|e| panic!("{e}")).run_id;
    env.settle().await;
    let dead = dead_receipt(&env).await;

    let listener =
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let listen = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let settings = ConsoleSettings {
        listen,
        no_login: false,
        hosts: Vec::new(),
        plain_http_on_network: false,
    };
    let operator = Operator::new("ops-alice").unwrap_or_else(|e| panic!("{e}"));
    let served = console(env.engine.clone(), operator, &settings).unwrap_or_else(|e| panic!("{e}"));
    let login = served.login_path.clone().unwrap_or_else(|| panic!("a login link"));
    tokio::spawn(async move { axum::serve(listener, served.router).await });
    let base = format!("http://{listen}");
    let browser = Browser::start();

    // Without the link, no page; with it, the overview.
    browser.open(&format!("{base}/console/"));
    assert!(browser.text("main").contains("login link"), "no session, no page");
    browser.open(&format!("{base}{login}"));
    // The link's form asks who signs in (the console's operator suggested); posting it spends it.
    browser.click("form[action=\"/console/login\"] button");
    browser.wait_for("h1", "the overview after the login", false, |t| t == "Overview");
    assert!(browser.title().starts_with("Overview"), "{}", browser.title());
    let overview = browser.text("main");
    assert!(overview.contains("send_receipt") && overview.contains("503"), "{overview}");
    assert!(overview.contains("Store warehouse"), "{overview}");
    assert!(!overview.contains("did not answer"), "every store answers: {overview}");
    browser.screenshot(&shot("console-overview.png"));

    // The dead receipt: found among the dead, opened, retried once the mailer is back.
    browser.open(&format!("{base}/console/deliveries?store=main&status=dead"));
    browser.screenshot(&shot("console-dead.png"));
    browser.click(&format!("a[href=\"/console/deliveries/{dead}\"]"));
    assert_eq!(browser.text("#delivery-status"), "dead");
    let record = browser.text("main");
    assert!(record.contains("Step record") && record.contains("mailer"), "{record}");
    env.sinks.set_failing("mailer", false);
    browser.click("form[action$=\"/retry\"] button");
    browser.wait_for("main", "the retry's answer", false, |t| t.contains("Done: retried"));
    env.settle().await;
    browser.wait_for("#delivery-status", "the retried receipt", true, |t| t == "handled");
    browser.screenshot(&shot("console-delivery.png"));

    // The run: listed, opened, cancelled with a reason; its timeline shows the compensations.
    browser.open(&format!("{base}/console/runs"));
    browser.click(&format!("a[href=\"/console/runs/{run}\"]"));
    assert_eq!(browser.text("#run-status"), "waiting");
    browser.type_into("input[name=reason]", "customer called to cancel");
    browser.click("form[action$=\"/cancel\"] button");
    browser.wait_for("main", "the cancellation's answer", false, |t| t.contains("Done: cancelled"));
    env.settle().await;
    browser.wait_for("#run-status", "the compensated run", true, |t| t == "cancelled");
    let timeline = browser.text("#timeline");
    assert!(timeline.contains("customer called to cancel"), "{timeline}");
    assert!(timeline.contains("run.cancelled") || timeline.contains("cancelled"), "{timeline}");
    browser.open(&format!("{base}/console/runs/{run}#timeline"));
    browser.screenshot(&shot("console-run.png"));

    // The schedule: paused, then resumed.
    browser.open(&format!("{base}/console/schedules/sales_summary"));
    browser.click("form[action$=\"/pause\"] button");
    browser.wait_for("#schedule-state", "the paused schedule", false, |t| t == "paused");
    browser.screenshot(&shot("console-schedule.png"));
    browser.click("form[action$=\"/resume\"] button");
    browser.wait_for("#schedule-state", "the resumed schedule", false, |t| t == "active");

    // Each change, under the console operator's name.
    browser.open(&format!("{base}/console/actions"));
    let log = browser.text("#actions");
    for action in ["delivery.retry", "run.cancel", "schedule.pause", "schedule.resume"] {
        assert!(log.contains(action), "{action} is not in the log: {log}");
    }
    browser.screenshot(&shot("console-actions.png"));
    let filter = ActionFilter { limit: 20, ..ActionFilter::default() };
    let stored =
        env.store("main").operator_actions(&filter).await.unwrap_or_else(|e| panic!("{e}"));
    let mut made: Vec<_> =
        stored.iter().map(|a| (a.action.as_str(), a.operator.as_str())).collect();
    made.sort_unstable();
    assert_eq!(
        made,
        [
            ("delivery.retry", "ops-alice"),
            ("run.cancel", "ops-alice"),
            ("schedule.pause", "ops-alice"),
            ("schedule.resume", "ops-alice"),
        ]
    );
    bless(&[
        "console-overview.png",
        "console-dead.png",
        "console-delivery.png",
        "console-run.png",
        "console-schedule.png",
        "console-actions.png",
    ]);
}
