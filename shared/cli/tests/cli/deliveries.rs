//! `jadpo deliveries` as an operator uses it: listed, filtered and shown; retried, discarded and
//! released by a named operator, each recorded; held deliveries shown as held, with a warning
//! while their breaker is open.

use crate::common;

use chrono::Utc;
use common::{filter, jadpo, jadpo_cli_account, ok, seed, stderr};
use jadpo_core::TransactionalStore;
use jadpo_test_harness::SqliteTestDb;
use serde_json::{Value, json};

#[tokio::test]
async fn deliveries_are_listed_filtered_and_shown() {
    let db = SqliteTestDb::migrated().await;
    seed(&db).await;
    let all: Value =
        serde_json::from_str(&ok(&jadpo(&db.url(), &["deliveries", "list", "--json"])))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all["deliveries"].as_array().map(Vec::len), Some(2));
    let dead = ok(&jadpo(&db.url(), &["deliveries", "list", "--status", "dead"]));
    assert!(dead.contains("d-1") && dead.contains("last failure: mailer answered 503"), "{dead}");
    assert!(!dead.contains("d-0"), "{dead}");
    let by_sub = ok(&jadpo(&db.url(), &["deliveries", "list", "--subscriber", "reserve_stock"]));
    assert!(by_sub.contains("d-0") && !by_sub.contains("d-1"), "{by_sub}");
    let none = ok(&jadpo(&db.url(), &["deliveries", "list", "--status", "discarded"]));
    assert!(none.contains("no deliveries match"));
    let shown: Value =
        serde_json::from_str(&ok(&jadpo(&db.url(), &["deliveries", "show", "d-1", "--json"])))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((shown["status"].as_str(), shown["attempts"].as_u64()), (Some("dead"), Some(1)));
    assert_eq!(shown["event"]["payload"]["order_id"], "o-1");
    let missing = jadpo(&db.url(), &["deliveries", "show", "nope"]);
    assert!(!missing.status.success() && stderr(&missing).contains("no delivery \"nope\""));
    let bad = jadpo(&db.url(), &["deliveries", "list", "--status", "lost"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("is not one of pending, handled, dead, discarded"));
}

#[tokio::test]
async fn deliveries_are_retried_discarded_and_released_by_a_named_operator() {
    let db = SqliteTestDb::migrated().await;
    seed(&db).await;
    let url = db.url();
    let nothing = jadpo(&url, &["deliveries", "retry", "--operator", "ann"]);
    assert!(!nothing.status.success() && stderr(&nothing).contains("name a delivery ID"));
    for verb in ["retry", "discard"] {
        for status in ["handled", "discarded"] {
            let args = ["deliveries", verb, "--status", status, "--reason", "r", "--operator", "a"];
            let args =
                if verb == "retry" { [&args[..4], &args[6..]].concat() } else { args.into() };
            let final_ = jadpo(&url, &args);
            assert_eq!(
                final_.status.code(),
                Some(2),
                "{verb} --status {status}: {}",
                stderr(&final_)
            );
            assert!(stderr(&final_).contains("are final"), "{}", stderr(&final_));
        }
    }
    let retried =
        ok(&jadpo(&url, &["deliveries", "retry", "--status", "dead", "--operator", "ann"]));
    assert!(retried.contains("retried d-1") && retried.contains("1 retried by ann"), "{retried}");
    assert!(retried.contains("the relay sends them now"), "{retried}");
    let shown: Value =
        serde_json::from_str(&ok(&jadpo(&url, &["deliveries", "show", "d-1", "--json"])))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((shown["status"].as_str(), shown["attempts"].as_u64()), (Some("pending"), Some(0)));
    let no_reason = jadpo(&url, &["deliveries", "discard", "d-1", "--operator", "ann"]);
    assert_eq!(no_reason.status.code(), Some(2), "--reason is required");
    let discarded = ok(&jadpo(
        &url,
        &["deliveries", "discard", "d-1", "--reason", "test order", "--operator", "ann"],
    ));
    assert!(discarded.contains("discarded d-1"), "{discarded}");
    assert!(
        discarded.contains("1 discarded by ann; discarding is final")
            && !discarded.contains("relay"),
        "discard printed retry's words: {discarded}"
    );
    let again = jadpo(&url, &["deliveries", "retry", "d-1", "--operator", "ann"]);
    assert!(
        !again.status.success() && stderr(&again).contains("discarding is final"),
        "{}",
        stderr(&again)
    );
    let released =
        ok(&jadpo(&url, &["deliveries", "release", "--connection", "mailer", "--operator", "ann"]));
    assert!(released.contains("released 0 held deliveries for mailer"), "{released}");
    let unknown =
        jadpo(&url, &["deliveries", "release", "--connection", "fax", "--operator", "ann"]);
    assert!(!unknown.status.success() && stderr(&unknown).contains("no connection named \"fax\""));
    let actions =
        jadpo_core::ports::ScheduleStore::operator_actions(&db.store(), &filter(None, None, 10))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    let seen: Vec<_> = actions.iter().map(|a| (a.action.as_str(), a.operator.as_str())).collect();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen.iter().all(|(_, who)| *who == "ann"));
    assert!(actions.iter().all(|a| a.db_role == "none (sqlite)"));
    // Beside the name ann gave, the account the verb really ran from.
    let account = jadpo_cli_account();
    assert!(
        actions.iter().all(|a| a.os_account.as_deref() == Some(account.as_str())),
        "{actions:?}"
    );
    let listed = ok(&jadpo(&url, &["actions", "list"]));
    assert!(listed.contains(&format!("by ann (none (sqlite), from {account})")), "{listed}");
    // Narrowed by who and since when; a malformed time is refused, saying the form it takes.
    let count = |args: &[&str]| {
        let out = ok(&jadpo(&url, &[&["actions", "list", "--json"], args].concat()));
        let parsed: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        parsed["actions"].as_array().map_or(0, Vec::len)
    };
    assert_eq!(count(&["--operator", "ann"]), 3);
    assert_eq!(count(&["--operator", "bob"]), 0, "another operator's actions");
    let newest = actions.first().map(|a| a.acted_at).unwrap_or_default();
    assert_eq!(count(&["--since", &newest.to_rfc3339()]), 1, "at or after the newest");
    let later = (newest + chrono::Duration::seconds(1)).to_rfc3339();
    assert_eq!(count(&["--since", &later]), 0, "after the newest");
    let bad = jadpo(&url, &["actions", "list", "--since", "yesterday"]);
    assert!(!bad.status.success(), "a malformed --since was taken");
    assert!(stderr(&bad).contains("write it as 2026-12-01T00:00:00Z"), "{}", stderr(&bad));
}

/// A delivery an open breaker holds is shown as held (by which connection, since when); retrying
/// it or releasing the connection's deliveries while the breaker is open warns that they will be
/// held again and names the command that closes it; once closed, a release warns no more.
#[tokio::test]
async fn held_deliveries_show_as_held_and_retry_warns_while_the_breaker_is_open() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    seed(&db).await;
    ok(&jadpo(&url, &["breakers", "open", "mailer", "--operator", "ann"]));
    let hold =
        "UPDATE jadpo_deliveries SET held_connection = 'mailer', held_at = $1 WHERE id = 'd-0'";
    let store = db.store();
    store.execute_once(hold, &[Utc::now().into()]).await.unwrap_or_else(|e| panic!("{e}"));
    let listed = ok(&jadpo(&url, &["deliveries", "list"]));
    let held_line = listed.lines().find(|l| l.starts_with("d-0")).unwrap_or_default();
    assert!(
        held_line.contains(" held ") && held_line.contains("held by the mailer breaker"),
        "{listed}"
    );
    let json: Value =
        serde_json::from_str(&ok(&jadpo(&url, &["deliveries", "show", "d-0", "--json"])))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json["held"]["connection"], json!("mailer"), "{json}");
    let shown: Value =
        serde_json::from_str(&ok(&jadpo(&url, &["deliveries", "show", "d-1", "--json"])))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shown["held"], Value::Null, "a dead delivery is held by nobody");

    let retried = jadpo(&url, &["deliveries", "retry", "d-0", "--operator", "ann"]);
    ok(&retried);
    assert!(stderr(&retried).contains("jadpo breakers close mailer"), "{}", stderr(&retried));
    // The retry released it; held again, the release names it.
    store.execute_once(hold, &[Utc::now().into()]).await.unwrap_or_else(|e| panic!("{e}"));
    let released =
        jadpo(&url, &["deliveries", "release", "--connection", "mailer", "--operator", "ann"]);
    let out = ok(&released);
    assert!(
        stderr(&released).contains("circuit breaker of mailer is open"),
        "{}",
        stderr(&released)
    );
    assert!(out.contains("released 1 held deliveries for mailer"), "{out}");
    let listed: Vec<&str> = out.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(listed, ["  d-0"], "the release names each delivery it released");
    let actions = ok(&jadpo(&url, &["actions", "list", "--kind", "connection", "--json"]));
    let actions: Value = serde_json::from_str(&actions).unwrap_or_else(|e| panic!("{e}"));
    let recorded = &actions["actions"][0];
    assert_eq!(recorded["action"], json!("delivery.release"), "{actions}");
    assert_eq!(recorded["item_state"]["released"], json!(["d-0"]), "{actions}");
    ok(&jadpo(&url, &["breakers", "close", "mailer", "--operator", "ann"]));
    let quiet =
        jadpo(&url, &["deliveries", "release", "--connection", "mailer", "--operator", "ann"]);
    ok(&quiet);
    assert!(!stderr(&quiet).contains("warning"), "{}", stderr(&quiet));
}
