//! `jadpo schedules`: the real binary against a migrated SQLite file, acting on the shop's
//! `sales_summary` schedule.

use crate::common;

use std::process::{Command, Output};

use common::{jadpo, text};
use jadpo_core::ports::ScheduleStore;
use jadpo_test_harness::SqliteTestDb;
use serde_json::Value;

fn json_of(out: &Output) -> Value {
    assert!(out.status.success(), "jadpo failed: {}", text(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

#[tokio::test]
async fn operators_pause_resume_and_trigger_and_each_action_is_recorded() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    let listed = json_of(&jadpo(&url, &["schedules", "list", "--json"]));
    assert_eq!(listed["declared_not_yet_stored"], serde_json::json!(["sales_summary"]));

    let paused = jadpo(&url, &["schedules", "pause", "sales_summary", "--operator", "alice"]);
    assert!(paused.status.success(), "{}", text(&paused));
    assert!(text(&paused).contains("paused sales_summary"), "{}", text(&paused));
    let listed = json_of(&jadpo(&url, &["schedules", "list", "--json"]));
    assert_eq!(listed["schedules"][0]["state"], "paused");
    assert_eq!(listed["schedules"][0]["expression"], "every 60s");
    let twice = jadpo(&url, &["schedules", "pause", "sales_summary", "--operator", "alice"]);
    assert!(!twice.status.success() && text(&twice).contains("already paused"), "{}", text(&twice));

    let resumed = json_of(&jadpo(
        &url,
        &["schedules", "resume", "sales_summary", "--operator", "bob", "--json"],
    ));
    assert_eq!(resumed["result"]["state"], "active");
    let triggered = json_of(&jadpo(
        &url,
        &["schedules", "trigger", "sales_summary", "--operator", "carol", "--json"],
    ));
    let run_id = triggered["result"]["run_id"].as_str().unwrap_or_default().to_owned();
    assert!(run_id.starts_with("sales_summary@operator@"), "{triggered}");
    let runs = json_of(&jadpo(&url, &["schedules", "runs", "sales_summary", "--json"]));
    assert_eq!(runs["runs"][0]["id"], run_id.as_str());
    assert_eq!(runs["runs"][0]["trigger"], "operator");
    let human = jadpo(&url, &["schedules", "list"]);
    assert!(text(&human).contains("sales_summary") && text(&human).contains("active"));

    let unknown = jadpo(&url, &["schedules", "pause", "nightly", "--operator", "alice"]);
    assert!(!unknown.status.success() && text(&unknown).contains("no schedule named \"nightly\""));

    let store = db.store();
    let actions = store
        .operator_actions(&jadpo_core::model::operator::ActionFilter {
            item_kind: Some("schedule".into()),
            item: Some("sales_summary".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let who: Vec<_> = actions
        .iter()
        .map(|a| (a.action.as_str(), a.operator.as_str(), a.db_role.as_str()))
        .collect();
    assert_eq!(
        who,
        [
            ("schedule.trigger", "carol", "none (sqlite)"),
            ("schedule.resume", "bob", "none (sqlite)"),
            ("schedule.pause", "alice", "none (sqlite)"),
        ]
    );
    // The trigger's event waits for the relay: one pending delivery to summarize_sales.
    let pending =
        store.schedule_runs(Some("sales_summary"), 10).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(pending[0].outbox_id.is_some());
}

/// No `--operator`, no `JADPO_OPERATOR`, and an operating-system account with no name (a
/// container's arbitrary uid, made here with a user namespace): refused, nothing changes.
#[tokio::test]
async fn an_operator_without_a_name_is_refused_and_nothing_changes() {
    let db = SqliteTestDb::migrated().await;
    let out = Command::new("unshare")
        .args(["--user", "--map-user=54321", env!("CARGO_BIN_EXE_jadpo")])
        .args(["schedules", "pause", "sales_summary"])
        .env("DATABASE_URL", db.url())
        .env_remove("JADPO_OPERATOR")
        .env_remove("USER")
        .env_remove("LOGNAME")
        .env_remove("USERNAME")
        .output()
        .unwrap_or_else(|e| panic!("cannot run unshare (util-linux) for a nameless account: {e}"));
    assert!(!out.status.success());
    assert!(text(&out).contains("--operator"), "{}", text(&out));
    assert!(text(&out).contains("account has no name"), "{}", text(&out));
    let store = db.store();
    assert!(
        store
            .operator_actions(&jadpo_core::model::operator::ActionFilter {
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty()
    );
    assert!(store.schedules_list().await.unwrap_or_else(|e| panic!("{e}")).is_empty());
}
