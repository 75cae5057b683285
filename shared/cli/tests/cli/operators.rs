//! `jadpo keys` and `jadpo deliveries`: the real binary against a migrated SQLite file.

use crate::common;

use common::{filter, jadpo, jadpo_cli_account, ok, seed, stderr};

use chrono::Utc;
use jadpo_core::TransactionalStore;
use jadpo_core::ports::ServiceKeyStore;
use jadpo_test_harness::SqliteTestDb;
use serde_json::{Value, json};

#[tokio::test]
async fn keys_are_issued_scoped_listed_revoked_and_rotated_each_recorded() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    ok(&jadpo(&url, &["migrate", "apply"])); // the shop's tables: `web` is one of its services
    let (store, batch) = (db.store(), "INSERT INTO shop_services (id) VALUES ('batch')");
    store.execute_once(batch, &[]).await.unwrap_or_else(|e| panic!("{e}")); // a second service
    let issue = ["keys", "issue", "--service", "web", "--scope", "action:place_order"];
    let out: Value = serde_json::from_str(&ok(&jadpo(
        &url,
        &[&issue[..], &["--scope", "runs", "--operator", "ann", "--json"]].concat(),
    )))
    .unwrap_or_else(|e| panic!("{e}"));
    let secret = out["key"].as_str().unwrap_or_default().to_owned();
    let id = out["id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        (out["service"].clone(), out["scopes"].clone()),
        (json!("web"), json!("action:place_order runs"))
    );
    let found =
        store.service_key_verify(&secret, Utc::now(), None).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(found.map(|k| k.service), Some("web".to_owned()));
    let human = ok(&jadpo(
        &url,
        &[
            "keys",
            "issue",
            "--service",
            "batch",
            "--scope",
            "*",
            "--expires-in-days",
            "30",
            "--operator",
            "ann",
        ],
    ));
    assert!(
        human.contains("shown once")
            && human.contains("jadpo_sk_")
            && human.contains("expires ")
            && human.contains("scopes: *"),
        "{human}"
    );
    // Listed without any secret.
    let listed = ok(&jadpo(&url, &["keys", "list", "--json"]));
    assert!(listed.contains(&id) && !listed.contains(&secret[9..]), "{listed}");
    let keys: Value = serde_json::from_str(&listed).unwrap_or_else(|e| panic!("{e}"));
    let issued = keys["keys"][0]["issued_at"].as_str().unwrap_or_default().to_owned();
    assert!(chrono::DateTime::parse_from_rfc3339(&issued).is_ok(), "{listed}");
    // Rotated: the old key stops, the new one works with the same scopes.
    let rotated: Value = serde_json::from_str(&ok(&jadpo(
        &url,
        &["keys", "rotate", &id, "--operator", "ann", "--json"],
    )))
    .unwrap_or_else(|e| panic!("{e}"));
    let new_secret = rotated["key"].as_str().unwrap_or_default().to_owned();
    assert_eq!(rotated["scopes"], json!("action:place_order runs"));
    let now = Utc::now();
    assert_eq!(
        store.service_key_verify(&secret, now, None).await.ok(),
        Some(None),
        "a rotated key worked"
    );
    let new =
        store.service_key_verify(&new_secret, now, None).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(new.map(|k| k.scopes.to_stored()), Some("action:place_order runs".to_owned()));
    // Revoked: the new key stops too; revoking again is refused and records nothing.
    let new_id = rotated["id"].as_str().unwrap_or_default().to_owned();
    ok(&jadpo(&url, &["keys", "revoke", &new_id, "--operator", "ann"]));
    assert_eq!(store.service_key_verify(&new_secret, Utc::now(), None).await.ok(), Some(None));
    let again = jadpo(&url, &["keys", "revoke", &new_id, "--operator", "ann"]);
    assert!(
        !again.status.success() && stderr(&again).contains("revoked already"),
        "{}",
        stderr(&again)
    );
    let actions = jadpo_core::ports::ScheduleStore::operator_actions(
        &store,
        &filter(Some("service_key"), None, 10),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let mut seen: Vec<_> = actions.iter().map(|a| a.action.as_str()).collect();
    seen.sort_unstable();
    assert_eq!(seen, ["keys.issue", "keys.issue", "keys.revoke", "keys.rotate"], "{actions:?}");
    assert!(actions.iter().all(|a| a.operator == "ann" && !a.item_state.contains(&secret[9..])));

    let bad = jadpo(
        &url,
        &["keys", "issue", "--service", "no spaces", "--scope", "*", "--operator", "ann"],
    );
    assert!(
        !bad.status.success() && stderr(&bad).contains("service name \"no spaces\""),
        "{}",
        stderr(&bad)
    );
    let unscoped = jadpo(&url, &["keys", "issue", "--service", "x", "--operator", "ann"]);
    assert_eq!(unscoped.status.code(), Some(2), "a key without --scope: {}", stderr(&unscoped));
    let unknown = jadpo(
        &url,
        &["keys", "issue", "--service", "x", "--scope", "action:nope", "--operator", "ann"],
    );
    assert!(
        !unknown.status.success() && stderr(&unknown).contains("action:nope"),
        "{}",
        stderr(&unknown)
    );
    let bad_scope =
        jadpo(&url, &["keys", "issue", "--service", "x", "--scope", "root", "--operator", "ann"]);
    assert!(
        !bad_scope.status.success() && stderr(&bad_scope).contains("\"root\""),
        "{}",
        stderr(&bad_scope)
    );
    let unlisted =
        jadpo(&url, &["keys", "issue", "--service", "x", "--scope", "*", "--operator", "ann"]);
    assert!(
        !unlisted.status.success() && stderr(&unlisted).contains("no service is named \"x\""),
        "a key was issued for a service the shop does not list: {}",
        stderr(&unlisted)
    );
    let zero =
        jadpo(&url, &["keys", "issue", "--service", "x", "--scope", "*", "--expires-in-days", "0"]);
    assert_eq!(zero.status.code(), Some(2));
    let listed = store.service_keys_list().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed.len(), 3, "a refused issue stored a key");
}

#[tokio::test]
async fn tokens_are_issued_and_ended_each_recorded() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    ok(&jadpo(&url, &["migrate", "apply"])); // the shop's tables: its customers are its users
    let issue = ["tokens", "issue", "--user", "alice", "--operator", "ann", "--json"];
    let unknown = jadpo(&url, &issue);
    assert!(
        !unknown.status.success() && stderr(&unknown).contains("no user has id \"alice\""),
        "a token was issued for a user the shop does not have: {}",
        stderr(&unknown)
    );
    {
        use jadpo_core::TransactionalStore;
        let sql = "INSERT INTO shop_customers (id, email) VALUES ('alice', 'alice@example.com')";
        let added = db.store().execute_once(sql, &[]).await;
        added.unwrap_or_else(|e| panic!("{e}"));
    }
    let out: Value =
        serde_json::from_str(&ok(&jadpo(&url, &issue))).unwrap_or_else(|e| panic!("{e}"));
    let token = out["token"].as_str().unwrap_or_default().to_owned();
    assert!(token.starts_with("jadpo_at_"), "{out}");
    let store = db.store();
    const API: jadpo_core::model::user_session::SessionKind =
        jadpo_core::model::user_session::SessionKind::ApiToken;
    let user = jadpo_core::ports::UserSessionStore::user_session_verify(
        &store,
        &token,
        API,
        Utc::now(),
        None,
    )
    .await;
    assert_eq!(user.ok().flatten().map(|s| s.user_id).as_deref(), Some("alice"));
    let ended = ok(&jadpo(&url, &["tokens", "end", "--user", "alice", "--operator", "ann"]));
    assert!(ended.contains("ended 1 live session"), "{ended}");
    let user = jadpo_core::ports::UserSessionStore::user_session_verify(
        &store,
        &token,
        API,
        Utc::now(),
        None,
    )
    .await;
    assert_eq!(user.ok(), Some(None), "a signed-out token worked");
    let actions = jadpo_core::ports::ScheduleStore::operator_actions(
        &store,
        &filter(Some("user_session"), None, 10),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let mut seen: Vec<_> = actions.iter().map(|a| a.action.as_str()).collect();
    seen.sort_unstable();
    assert_eq!(seen, ["tokens.end_all", "tokens.issue"]);
    assert!(actions.iter().all(|a| !a.item_state.contains(&token[9..])
        && !a.detail.as_deref().unwrap_or_default().contains(&token[9..])));
    let bad = jadpo(&url, &["tokens", "issue", "--user", "", "--operator", "ann"]);
    assert!(!bad.status.success() && stderr(&bad).contains("user id"), "{}", stderr(&bad));
}

#[tokio::test]
async fn breakers_are_listed_and_forced_by_a_named_operator() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    let empty = ok(&jadpo(&url, &["breakers", "list"]));
    assert!(empty.contains("no breaker"), "{empty}");
    let opened = ok(&jadpo(&url, &["breakers", "open", "mailer", "--operator", "ann"]));
    assert!(opened.contains("opened mailer in store main"), "{opened}");
    let listed: Value = serde_json::from_str(&ok(&jadpo(&url, &["breakers", "list", "--json"])))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed["breakers"][0]["state"], "open");
    // The text line says when it opened, its pause and the next probe, as the docs promise.
    let text = ok(&jadpo(&url, &["breakers", "list"]));
    assert!(
        ["open since ", "  pause ", "s  next probe "].iter().all(|w| text.contains(w)),
        "{text}"
    );
    let again = ok(&jadpo(&url, &["breakers", "open", "mailer", "--operator", "ann"]));
    assert!(again.contains("already opened; nothing recorded"), "{again}");
    let closed = ok(&jadpo(&url, &["breakers", "close", "mailer", "--operator", "ann"]));
    assert!(closed.contains("closed mailer in store main, 0 held deliveries released"), "{closed}");
    let unknown = jadpo(&url, &["breakers", "open", "fax", "--operator", "ann"]);
    assert!(!unknown.status.success() && stderr(&unknown).contains("no connection named \"fax\""));
    let actions = jadpo_core::ports::ScheduleStore::operator_actions(
        &db.store(),
        &filter(Some("breaker"), Some("mailer"), 10),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!actions.is_empty(), "no operator action recorded");
    assert!(actions.iter().all(|a| a.operator == "ann" && a.db_role == "none (sqlite)"));
    let mut seen: Vec<_> = actions.iter().map(|a| a.action.as_str()).collect();
    seen.sort_unstable();
    assert_eq!(seen, ["breaker.close", "breaker.open"]);
}

#[tokio::test]
async fn flags_are_set_and_their_history_names_who() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    let listed = ok(&jadpo(&url, &["flags", "list"]));
    assert!(listed.contains("receipt_survey") && listed.contains("never set"), "{listed}");
    let set = ok(&jadpo(&url, &["flags", "set", "receipt_survey", "25%", "--operator", "ann"]));
    assert!(set.contains("receipt_survey: off → 25% (recorded by ann"), "{set}");
    let same = ok(&jadpo(&url, &["flags", "set", "receipt_survey", "25", "--operator", "ann"]));
    assert!(same.contains("already 25%; nothing recorded"), "{same}");
    let bad = jadpo(&url, &["flags", "set", "receipt_survey", "half", "--operator", "ann"]);
    assert!(
        !bad.status.success() && stderr(&bad).contains("is not a flag state"),
        "{}",
        stderr(&bad)
    );
    let unknown = jadpo(&url, &["flags", "set", "nope", "on", "--operator", "ann"]);
    assert!(!unknown.status.success() && stderr(&unknown).contains("no flag named \"nope\""));
    ok(&jadpo(&url, &["flags", "set", "receipt_survey", "on", "--operator", "bo"]));
    let history: Value =
        serde_json::from_str(&ok(&jadpo(&url, &["flags", "history", "receipt_survey", "--json"])))
            .unwrap_or_else(|e| panic!("{e}"));
    let changes = history["changes"].as_array().cloned().unwrap_or_default();
    assert_eq!(changes.len(), 2, "{history}");
    let who: Vec<_> = changes.iter().map(|c| c["operator"].as_str().unwrap_or_default()).collect();
    assert!(who.contains(&"ann") && who.contains(&"bo"), "{who:?}");
    assert!(changes.iter().all(|c| c["db_role"] == "none (sqlite)"));
    let account = jadpo_cli_account();
    assert!(changes.iter().all(|c| c["os_account"] == account.as_str()), "{history}");
    let listed: Value = serde_json::from_str(&ok(&jadpo(&url, &["flags", "list", "--json"])))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed["flags"][0]["state"], "on");
    assert_eq!(listed["flags"][0]["updated_by"], "bo");
    // JSON times are RFC 3339 everywhere; the text history has a header row.
    let at = listed["flags"][0]["updated_at"].as_str().unwrap_or_default().to_owned();
    assert!(chrono::DateTime::parse_from_rfc3339(&at).is_ok(), "{listed}");
    assert!(changes.iter().all(|c| {
        chrono::DateTime::parse_from_rfc3339(c["changed_at"].as_str().unwrap_or_default()).is_ok()
    }));
    let text = ok(&jadpo(&url, &["flags", "history", "receipt_survey"]));
    assert!(text.lines().next().is_some_and(|l| l.starts_with("CHANGED AT")), "{text}");
}

#[tokio::test]
async fn an_audited_record_is_shown_and_erased_with_its_rows() {
    let db = SqliteTestDb::empty();
    let url = db.url();
    ok(&jadpo(&url, &["migrate", "apply"]));
    let store = db.store();
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    for sql in [
        "INSERT INTO shop_orders (id, customer, items, created_at) VALUES ('o1', 'c1', '[]', 1)",
        "UPDATE shop_orders SET customer = 'c2' WHERE id = 'o1'",
    ] {
        tx.execute(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let shown: Value =
        serde_json::from_str(&ok(&jadpo(&url, &["audit", "show", "order", "o1", "--json"])))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shown["changes"].as_array().map(Vec::len), Some(2), "{shown}");
    assert_eq!(shown["changes"][1]["changes"]["customer"]["after"], "c2");
    assert_eq!(shown["replays_to_current"], true);
    let human = ok(&jadpo(&url, &["audit", "show", "order", "o1"]));
    assert!(human.contains("outside the runtime") && human.contains("replay"), "{human}");
    let unknown = jadpo(&url, &["audit", "show", "invoice", "o1"]);
    assert!(!unknown.status.success() && stderr(&unknown).contains("no audited entity named"));
    let erased = ok(&jadpo(
        &url,
        &["audit", "erase", "order", "o1", "--reason", "GDPR request", "--operator", "ann"],
    ));
    assert!(erased.contains("erased order o1 and 3 audit rows"), "{erased}");
    let after = ok(&jadpo(&url, &["audit", "show", "order", "o1"]));
    assert!(after.contains("no audit rows"), "{after}");
    let again =
        jadpo(&url, &["audit", "erase", "order", "o1", "--reason", "x", "--operator", "ann"]);
    assert!(
        !again.status.success() && stderr(&again).contains("no order record"),
        "{}",
        stderr(&again)
    );
    let actions = jadpo_core::ports::ScheduleStore::operator_actions(
        &store,
        &filter(Some("order"), None, 10),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(actions.len(), 1);
    assert_eq!(
        (actions[0].action.as_str(), actions[0].detail.as_deref()),
        ("record.erase", Some("GDPR request"))
    );
}

/// The operator recorded: `--operator`, else `JADPO_OPERATOR` (empty counts as unset), else the
/// operating-system account — read from the system, so a container or CI job without `$USER`
/// still records who acted.
#[tokio::test]
async fn the_operator_is_the_flag_then_jadpo_operator_then_the_os_account() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    ok(&jadpo(&url, &["migrate", "apply"]));
    let issue = |flag: Option<&str>, env: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_jadpo"));
        cmd.args(["keys", "issue", "--service", "web", "--scope", "runs"]);
        if let Some(name) = flag {
            cmd.args(["--operator", name]);
        }
        cmd.env("DATABASE_URL", &url).env_remove("USER").env_remove("LOGNAME");
        cmd.env_remove("USERNAME").env_remove("JADPO_OPERATOR");
        if let Some(value) = env {
            cmd.env("JADPO_OPERATOR", value);
        }
        ok(&cmd.output().unwrap_or_else(|e| panic!("{e}")))
    };
    let account = std::process::Command::new("id").arg("-un").output();
    let account = String::from_utf8_lossy(&account.unwrap_or_else(|e| panic!("{e}")).stdout)
        .trim()
        .to_owned();
    issue(Some("ann"), Some("robot"));
    issue(None, Some("robot"));
    issue(None, Some(""));
    issue(None, None);
    let store = db.store();
    let actions = jadpo_core::ports::ScheduleStore::operator_actions(
        &store,
        &filter(Some("service_key"), None, 10),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let mut operators: Vec<_> = actions.iter().map(|a| a.operator.clone()).collect();
    operators.sort();
    let mut expected = vec!["ann".to_owned(), "robot".to_owned(), account.clone(), account];
    expected.sort();
    assert_eq!(operators, expected);
}

/// A verb never creates a database: a mistyped SQLite path is refused and stays absent; an
/// existing database that was never migrated is refused with what to run.
#[test]
fn a_verb_needs_an_existing_migrated_database() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let typo = dir.path().join("mian.db");
    let url = format!("sqlite://{}", typo.display());
    for verb in
        [&["deliveries", "list"][..], &["keys", "list"], &["schedules", "list"], &["verify"]]
    {
        let out = jadpo(&url, verb);
        assert!(
            !out.status.success() && stderr(&out).contains("does not exist"),
            "{verb:?}: {}",
            stderr(&out)
        );
        assert!(!typo.exists(), "{verb:?} created {}", typo.display());
    }
    std::fs::File::create(&typo).unwrap_or_else(|e| panic!("{e}"));
    let out = jadpo(&url, &["deliveries", "list"]);
    assert!(
        !out.status.success()
            && stderr(&out).contains("is not migrated: run `jadpo migrate apply`"),
        "{}",
        stderr(&out)
    );
}

/// Every verb answers JSON with `--json`: one JSON document on standard output, nothing else
/// there. (`export` writes its JSON-lines file itself; `migrate sql` prints SQL.)
#[tokio::test]
async fn every_verb_answers_json() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    ok(&jadpo(&url, &["migrate", "apply"]));
    seed(&db).await;
    let store = db.store();
    let order =
        "INSERT INTO shop_orders (id, customer, items, created_at) VALUES ('o-1', 'c1', '[]', 0)";
    store.execute_once(order, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let customer = "INSERT INTO shop_customers (id, email) VALUES ('alice', 'alice@example.com')";
    store.execute_once(customer, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let json = |args: &[&str]| -> Value {
        let all = [args, &["--json", "--operator", "ann"]].concat();
        let said = ok(&jadpo(&url, &all));
        serde_json::from_str(said.trim()).unwrap_or_else(|e| panic!("{args:?} --json: {e}: {said}"))
    };
    let read = |args: &[&str]| -> Value {
        let said = ok(&jadpo(&url, &[args, &["--json"]].concat()));
        serde_json::from_str(said.trim()).unwrap_or_else(|e| panic!("{args:?} --json: {e}: {said}"))
    };
    let key = json(&["keys", "issue", "--service", "web", "--scope", "runs"]);
    let id = key["id"].as_str().unwrap_or_default().to_owned();
    let rotated = json(&["keys", "rotate", &id]);
    let new_id = rotated["id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(json(&["keys", "revoke", &new_id])["id"], json!(new_id));
    assert!(read(&["keys", "list"])["keys"].is_array());
    assert!(json(&["tokens", "issue", "--user", "alice"])["token"].is_string());
    assert_eq!(json(&["tokens", "end", "--user", "alice"])["ended"], json!(1));
    assert!(read(&["deliveries", "list"])["deliveries"].is_array());
    assert_eq!(read(&["deliveries", "show", "d-1"])["id"], json!("d-1"));
    assert_eq!(json(&["deliveries", "retry", "d-1"])["retried"][0]["id"], json!("d-1"));
    let discarded = json(&["deliveries", "discard", "d-1", "--reason", "test"]);
    assert_eq!(discarded["discarded"][0]["id"], json!("d-1"));
    assert_eq!(
        json(&["deliveries", "release", "--connection", "mailer"])["connection"],
        json!("mailer")
    );
    assert_eq!(json(&["breakers", "open", "mailer"])["state"], json!("open"));
    assert!(read(&["breakers", "list"])["breakers"].is_array());
    assert_eq!(json(&["breakers", "close", "mailer"])["state"], json!("closed"));
    assert_eq!(json(&["flags", "set", "receipt_survey", "25%"])["changed"], json!(true));
    assert!(read(&["flags", "list"]).is_object());
    assert!(read(&["flags", "history", "receipt_survey"]).is_object());
    assert!(read(&["schedules", "list"]).is_object());
    assert!(json(&["schedules", "pause", "sales_summary"]).is_object());
    assert!(json(&["schedules", "resume", "sales_summary"]).is_object());
    assert!(json(&["schedules", "trigger", "sales_summary"]).is_object());
    assert!(read(&["schedules", "runs", "sales_summary"]).is_object());
    assert!(read(&["audit", "show", "order", "o-1"]).is_object());
    let erased = json(&["audit", "erase", "order", "o-1", "--reason", "test"]);
    assert_eq!(erased["id"], json!("o-1"));
    assert!(read(&["verify"]).is_object());
    assert!(read(&["migrate", "status"]).is_object());
    assert!(read(&["migrate", "apply"]).is_object());
    // The operator-action log holds every change above, each by ann.
    let log = read(&["actions", "list"]);
    let all = log["actions"].as_array().cloned().unwrap_or_default();
    assert!(all.len() >= 14 && all.iter().all(|a| a["operator"] == json!("ann")), "{log}");
    let keys = read(&["actions", "list", "--kind", "service_key"]);
    let keys = keys["actions"].as_array().cloned().unwrap_or_default();
    let mut seen: Vec<_> = keys.iter().filter_map(|a| a["action"].as_str()).collect();
    seen.sort_unstable();
    assert_eq!(seen, ["keys.issue", "keys.revoke", "keys.rotate"]);
    // For people, every verb writes a time one way: `2026-12-01 07:08:32 UTC`.
    let lists: [&[&str]; 4] = [
        &["keys", "list"],
        &["deliveries", "list"],
        &["flags", "history", "receipt_survey"],
        &["schedules", "list"],
    ];
    for verb in lists {
        let said = ok(&jadpo(&url, verb));
        assert!(said.contains(" UTC") && !said.contains("+00:00"), "{verb:?}: {said}");
    }
    // Every listing starts with a header row naming its columns.
    let listings: [&[&str]; 7] = [
        &["keys", "list"],
        &["deliveries", "list"],
        &["actions", "list"],
        &["flags", "list"],
        &["schedules", "list"],
        &["schedules", "runs", "sales_summary"],
        &["breakers", "list"],
    ];
    for verb in listings {
        let said = ok(&jadpo(&url, verb));
        let first = said.lines().next().unwrap_or_default();
        let word = first.split_whitespace().next().unwrap_or_default();
        assert!(
            !word.is_empty() && word.chars().all(|c| c.is_ascii_uppercase()),
            "{verb:?}: {said}"
        );
    }
    let text = ok(&jadpo(&url, &["actions", "list", "--kind", "breaker"]));
    assert!(text.contains("breaker.open") && text.contains("by ann"), "{text}");
}

/// A name the application does not declare gets the same answer from every verb: what kind of
/// thing, which name, and what is declared; exit status 1; nothing changes.
#[tokio::test]
async fn an_unknown_name_gets_the_same_answer_everywhere() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    ok(&jadpo(&url, &["migrate", "apply"]));
    let cases: [(&[&str], &str); 9] = [
        (&["schedules", "pause", "nope", "--operator", "ann"], "schedule"),
        (&["schedules", "runs", "nope"], "schedule"),
        (&["flags", "set", "nope", "on", "--operator", "ann"], "flag"),
        (&["flags", "history", "nope"], "flag"),
        (&["breakers", "open", "nope", "--operator", "ann"], "connection"),
        (&["breakers", "close", "nope", "--operator", "ann"], "connection"),
        (&["deliveries", "release", "--connection", "nope", "--operator", "ann"], "connection"),
        (&["audit", "show", "nope", "x"], "audited entity"),
        (&["audit", "erase", "nope", "x", "--reason", "r", "--operator", "ann"], "audited entity"),
    ];
    for (verb, kind) in cases {
        let out = jadpo(&url, verb);
        let said = stderr(&out);
        let expected = format!("no {kind} named \"nope\" is declared (declared: ");
        assert!(out.status.code() == Some(1) && said.contains(&expected), "{verb:?}: {said}");
    }
    let actions =
        jadpo_core::ports::ScheduleStore::operator_actions(&db.store(), &filter(None, None, 10))
            .await;
    assert!(actions.unwrap_or_default().is_empty(), "a refused verb recorded an action");
}

/// `jadpo passkeys list | remove`: a user's passkeys listed (ids and times, never a key), one
/// removed, then every one with `--all`, each removal recorded as `passkeys.remove`; an unknown
/// passkey and a missing argument are refused with nothing changed.
#[tokio::test]
async fn passkeys_are_listed_and_removed_each_recorded() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    ok(&jadpo(&url, &["migrate", "apply"]));
    for sql in [
        "INSERT INTO shop_customers (id, email) VALUES ('alice', 'alice@example.com')",
        "INSERT INTO jadpo_passkeys (credential_id, user_id, user_handle, credential, counters, \
         registered_at) VALUES ('cred-a', 'alice', 'h', x'00', x'00', 1000), \
         ('cred-b', 'alice', 'h', x'00', x'00', 2000), ('cred-m', 'mallory', 'm', x'00', x'00', 3000)",
    ] {
        db.store().execute_once(sql, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    }
    let listed: Value =
        serde_json::from_str(&ok(&jadpo(&url, &["passkeys", "list", "--user", "alice", "--json"])))
            .unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<&str> = listed["passkeys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k["credential_id"].as_str())
        .collect();
    assert_eq!(ids, ["cred-a", "cred-b"], "{listed}");
    let text = ok(&jadpo(&url, &["passkeys", "list", "--user", "alice"]));
    assert!(text.starts_with("CREDENTIAL") && text.contains("never"), "{text}");
    let count = || async {
        let rows = db.store().query_once("SELECT count(*) AS n FROM jadpo_passkeys", &[]).await;
        rows.unwrap_or_else(|e| panic!("{e}"))[0].get_i64("n").unwrap_or_default()
    };
    let remove = |args: &[&str]| {
        jadpo(
            &url,
            &[&["passkeys", "remove", "--user", "alice", "--operator", "ann"][..], args].concat(),
        )
    };
    let unknown = remove(&["cred-m"]);
    assert!(
        !unknown.status.success() && stderr(&unknown).contains("no passkey cred-m"),
        "{}",
        stderr(&unknown)
    );
    let neither = remove(&[]);
    assert_eq!(neither.status.code(), Some(2), "a credential id or --all is required");
    assert_eq!(count().await, 3, "a refused removal changed something");
    assert!(ok(&remove(&["cred-a"])).contains("removed 1 passkey"));
    assert!(ok(&remove(&["--all"])).contains("removed 1 passkey"));
    assert_eq!(count().await, 1, "mallory's passkey is not alice's");
    let actions = jadpo_core::ports::ScheduleStore::operator_actions(
        &db.store(),
        &filter(Some("user"), None, 10),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let seen: Vec<_> = actions.iter().map(|a| (a.action.as_str(), a.operator.as_str())).collect();
    assert_eq!(seen.len(), 2, "the refused removal was recorded: {seen:?}");
    assert!(seen.iter().all(|(a, o)| *a == "passkeys.remove" && *o == "ann"), "{seen:?}");
}
