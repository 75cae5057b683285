//! The console over HTTP with the sample shop, on both adapters: no page without a session, a
//! session only from the printed login link, another host refused, a change without the session's
//! CSRF token refused with nothing changed, and a retry and a discard made through the operator
//! use cases, each recorded as an operator action with the console operator's name and the
//! database role. A second console's session is someone else's: refused here.

use axum::http::StatusCode;
use chrono::Utc;
use jadpo_console::{ConsoleSettings, console};
use jadpo_core::model::delivery::{DeliveryStatus, NewDelivery, NewEvent, Outcome};
use jadpo_core::model::operator::ActionFilter;
use jadpo_engine::operate::Operator;
use jadpo_test_env::{Env, Kind};
use serde_json::json;

use crate::common;

use common::{open, send, send_to, settings, sign_in};

/// An order event with two deliveries: `d-0` pending, `d-1` dead ("mailer answered 503").
async fn seed(env: &Env) {
    let store = env.store("main");
    let now = Utc::now();
    let event = NewEvent {
        id: "e-1".into(),
        event_type: "order.placed".into(),
        payload: json!({"order_id": "o-<script>"}),
        traceparent: None,
        tracestate: None,
        chain_depth: 0,
        source: "place_order".into(),
        request_id: None,
        created_at: now,
    };
    let deliveries: Vec<NewDelivery> = ["reserve_stock", "send_receipt"]
        .iter()
        .enumerate()
        .map(|(i, s)| NewDelivery {
            id: format!("d-{i}"),
            outbox_id: "e-1".into(),
            subscriber: (*s).into(),
            created_at: now,
        })
        .collect();
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    store.outbox_append(tx.as_mut(), &event, &deliveries).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let dead = Outcome::Failed { failure: "mailer answered 503".into(), retry_at: None };
    store.delivery_record_outcome("d-1", &dead, now).await.unwrap_or_else(|e| panic!("{e}"));
}

async fn actions(env: &Env) -> Vec<(String, String, String)> {
    let filter = ActionFilter { limit: 10, ..ActionFilter::default() };
    let found = env.store("main").operator_actions(&filter).await.unwrap_or_else(|e| panic!("{e}"));
    found.into_iter().map(|a| (a.action, a.item, a.operator)).collect()
}

async fn status(env: &Env, id: &str) -> DeliveryStatus {
    let d = env.store("main").delivery_get(id).await.unwrap_or_else(|e| panic!("{e}"));
    d.unwrap_or_else(|| panic!("no delivery {id}")).status
}

async fn only_a_session_reads_and_only_its_token_changes(kind: Kind) {
    let env = Env::shop(kind).await;
    seed(&env).await;
    let console = open(&env);
    for path in ["/console/", "/console/deliveries", "/console/deliveries/d-1"] {
        let none = send(&console, "GET", path, None, "").await;
        assert_eq!(none.status, StatusCode::UNAUTHORIZED, "{kind:?}: {path} read by no one");
        assert!(!none.text.contains("mailer answered"), "{kind:?}: {path} leaked");
    }
    let wrong = send(&console, "GET", "/console/login?token=00", None, "").await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{kind:?}: a wrong token");
    assert!(wrong.headers.get("set-cookie").is_none());
    let (cookie, csrf) = sign_in(&console).await;
    let c = Some(cookie.as_str());
    // The printed link worked once: opened or posted again, it is refused.
    let link = console.login_path.clone().unwrap_or_default();
    let again = send(&console, "GET", &link, None, "").await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED, "{kind:?}: a spent link: {}", again.text);
    let token = link.split("token=").nth(1).unwrap_or_default();
    let replay = format!("token={token}&operator=mallory");
    let replayed = send(&console, "POST", "/console/login", None, &replay).await;
    assert_eq!(replayed.status, StatusCode::UNAUTHORIZED, "{kind:?}: a spent link posted");
    assert!(replayed.headers.get("set-cookie").is_none());
    // A signed-in operator makes a link for another browser; that login names its own operator.
    let minted = send(&console, "POST", "/console/login-links", c, &format!("csrf={csrf}")).await;
    assert_eq!(minted.status, StatusCode::OK, "{kind:?}: {}", minted.text);
    let minted_link =
        minted.text.split("id=\"login-link\">").nth(1).and_then(|r| r.split('<').next());
    let minted_link = minted_link.unwrap_or_else(|| panic!("no link in {}", minted.text));
    let path =
        minted_link.split_once("7070").map(|(_, p)| p.replace("&amp;", "&")).unwrap_or_default();
    let unnamed = send(
        &console,
        "POST",
        "/console/login",
        None,
        &format!("token={}&operator=+", path.split("token=").nth(1).unwrap_or_default()),
    )
    .await;
    assert_eq!(unnamed.status, StatusCode::UNPROCESSABLE_ENTITY, "{kind:?}: no name, no session");
    let (bobs, _) = common::sign_in_as(&console, &path, "bob on call").await;
    let bob_page = send(&console, "GET", "/console/", Some(&bobs), "").await;
    assert!(bob_page.text.contains("Sign out bob on call"), "{kind:?}: {}", bob_page.text);
    let forged_mint = send(&console, "POST", "/console/login-links", c, "csrf=0").await;
    assert_eq!(forged_mint.status, StatusCode::FORBIDDEN, "{kind:?}: a link needs the token");

    let overview = send(&console, "GET", "/console/", c, "").await;
    assert_eq!(overview.status, StatusCode::OK, "{kind:?}");
    assert!(
        overview.text.contains("send_receipt") && overview.text.contains("mailer answered 503")
    );
    assert!(overview.text.contains("http-equiv=\"refresh\""), "{kind:?}: it refreshes");
    let dead = send(&console, "GET", "/console/deliveries?status=dead&store=main", c, "").await;
    assert!(dead.text.contains("d-1") && !dead.text.contains("d-0"), "{kind:?}: {}", dead.text);
    let bad = send(&console, "GET", "/console/deliveries?status=lost", c, "").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{kind:?}");
    let shown = send(&console, "GET", "/console/deliveries/d-0", c, "").await;
    assert!(shown.text.contains("o-&lt;script&gt;"), "{kind:?}: the payload is escaped");
    assert!(!shown.text.contains("o-<script>"), "{kind:?}");
    let policy = shown.headers.get("content-security-policy").and_then(|v| v.to_str().ok());
    assert!(policy.is_some_and(|p| p.contains("default-src 'none'")), "{kind:?}");

    let rebound = send_to(&console, "evil.example:7070", ("GET", "/console/"), c, "").await;
    assert_eq!(rebound.status, StatusCode::MISDIRECTED_REQUEST, "{kind:?}: another host");

    // A change without the session's token, or with another's: refused, nothing changed.
    for form in [String::new(), "csrf=".into(), format!("csrf={}", "0".repeat(64))] {
        let refused = send(&console, "POST", "/console/deliveries/d-1/retry", c, &form).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{kind:?}: {form:?}");
    }
    let by_no_one =
        send(&console, "POST", "/console/deliveries/d-1/retry", None, &format!("csrf={csrf}"))
            .await;
    assert_eq!(by_no_one.status, StatusCode::UNAUTHORIZED, "{kind:?}");
    let someone_else = open(&env);
    let (their_cookie, their_csrf) = sign_in(&someone_else).await;
    let their_form = format!("csrf={their_csrf}");
    let theirs =
        send(&console, "POST", "/console/deliveries/d-1/retry", Some(&their_cookie), &their_form);
    assert_eq!(
        theirs.await.status,
        StatusCode::UNAUTHORIZED,
        "{kind:?}: another console's session"
    );
    assert_eq!(status(&env, "d-1").await, DeliveryStatus::Dead, "{kind:?}: nothing changed");
    assert!(actions(&env).await.is_empty(), "{kind:?}: nothing recorded");

    let retried =
        send(&console, "POST", "/console/deliveries/d-1/retry", c, &format!("csrf={csrf}")).await;
    assert_eq!(retried.status, StatusCode::SEE_OTHER, "{kind:?}: {}", retried.text);
    assert_eq!(status(&env, "d-1").await, DeliveryStatus::Pending, "{kind:?}: retried");
    let no_reason = send(
        &console,
        "POST",
        "/console/deliveries/d-0/discard",
        c,
        &format!("csrf={csrf}&reason="),
    )
    .await;
    assert_eq!(no_reason.status, StatusCode::BAD_REQUEST, "{kind:?}: a discard needs a reason");
    let discarded = send(
        &console,
        "POST",
        "/console/deliveries/d-0/discard",
        c,
        &format!("csrf={csrf}&reason=duplicate+order"),
    )
    .await;
    assert_eq!(discarded.status, StatusCode::SEE_OTHER, "{kind:?}: {}", discarded.text);
    assert_eq!(status(&env, "d-0").await, DeliveryStatus::Discarded, "{kind:?}");
    let again =
        send(&console, "POST", "/console/deliveries/d-0/retry", c, &format!("csrf={csrf}")).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{kind:?}: the use case's own refusal");
    assert!(again.text.contains("discarding is final"), "{kind:?}: {}", again.text);
    let mut recorded = actions(&env).await;
    recorded.sort();
    assert_eq!(
        recorded,
        [
            ("delivery.discard".to_owned(), "d-0".to_owned(), "ops-alice".to_owned()),
            ("delivery.retry".to_owned(), "d-1".to_owned(), "ops-alice".to_owned()),
        ],
        "{kind:?}"
    );

    let out = send(&console, "POST", "/console/logout", c, &format!("csrf={csrf}")).await;
    assert_eq!(out.status, StatusCode::OK, "{kind:?}");
    let after = send(&console, "GET", "/console/", c, "").await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED, "{kind:?}: signed out");
}

#[tokio::test]
async fn only_a_session_reads_and_only_its_token_changes_on_both() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        only_a_session_reads_and_only_its_token_changes(kind).await;
    }
}

#[tokio::test]
async fn without_a_login_the_console_listens_on_loopback_only() {
    let env = Env::shop(Kind::Sqlite).await;
    let operator = || Operator::new("ops").unwrap_or_else(|e| panic!("{e}"));
    let public = ConsoleSettings {
        listen: "0.0.0.0:7070".parse().unwrap_or_else(|e| panic!("{e}")),
        no_login: true,
        hosts: Vec::new(),
        plain_http_on_network: true,
    };
    let refused = console(env.engine.clone(), operator(), &public);
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("listen on a loopback address"), "{message}");
    let plain = ConsoleSettings { no_login: false, plain_http_on_network: false, ..public.clone() };
    let refused = console(env.engine.clone(), operator(), &plain);
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("plain HTTP") && message.contains("--plain-http-on-network"),
        "{message}"
    );
    let with_login = ConsoleSettings { no_login: false, ..public };
    let asked = console(env.engine.clone(), operator(), &with_login);
    assert!(asked.is_ok(), "a login and the explicit flag make it a choice");
    let local = ConsoleSettings { no_login: true, ..settings() };
    let open = console(env.engine.clone(), operator(), &local).unwrap_or_else(|e| panic!("{e}"));
    assert!(open.login_path.is_none());
    let page = send(&open, "GET", "/console/", None, "").await;
    assert_eq!(page.status, StatusCode::OK, "no login asked on loopback");
    let forged = send(&open, "POST", "/console/deliveries/d-1/retry", None, "csrf=x").await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "still a CSRF token for every change");
}

/// The `href`s of links on `page` whose text is `label`, unescaped.
fn links(page: &str, label: &str) -> Vec<String> {
    page.split("<a href=\"")
        .skip(1)
        .filter_map(|rest| {
            let (href, after) = rest.split_once("\">")?;
            after.starts_with(label).then(|| href.replace("&amp;", "&"))
        })
        .collect()
}

/// The value of hidden input `name` on `page`.
fn hidden(page: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    page.split(&marker).nth(1)?.split('"').next().map(|v| v.replace("&amp;", "&"))
}

async fn lists_page_by_keyset_and_changes_are_confirmed_with_their_count(kind: Kind) {
    let env = Env::shop(kind).await;
    seed(&env).await;
    let console = open(&env);
    let (cookie, csrf) = sign_in(&console).await;
    let c = Some(cookie.as_str());

    // A page of one, then older pages until none is left: each delivery once, newest first.
    let (mut next, mut seen) =
        (Some("/console/deliveries?store=main&limit=1".to_owned()), Vec::new());
    while let Some(path) = next.take() {
        let got = send(&console, "GET", &path, c, "").await;
        assert_eq!(got.status, StatusCode::OK, "{kind:?}: {path}");
        seen.extend(
            ["d-1", "d-0"].into_iter().filter(|id| got.text.contains(&format!(">{id}</a>"))),
        );
        next = links(&got.text, "Older").into_iter().next();
        assert!(seen.len() <= 3, "{kind:?}: paging does not end");
    }
    assert_eq!(seen, ["d-1", "d-0"], "{kind:?}: same second, the larger id first");
    let by_type = send(&console, "GET", "/console/deliveries?event_type=order.paid", c, "").await;
    assert!(by_type.text.contains("No deliveries match."), "{kind:?}: another event type");
    let window = "/console/deliveries?from=2000-01-01T00:00&to=2000-01-02T00:00";
    assert!(send(&console, "GET", window, c, "").await.text.contains("No deliveries match."));
    for bad in ["from=yesterday", "before_at=2026-01-01T00:00", "store=nowhere", "limit=many"] {
        let got = send(&console, "GET", &format!("/console/deliveries?{bad}"), c, "").await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST, "{kind:?}: {bad}");
    }
    let dead = send(&console, "GET", "/console/deliveries?store=main&status=dead", c, "").await;
    assert!(dead.text.contains("Dead, by subscriber and failure"), "{kind:?}: grouped");
    assert!(dead.text.contains("mailer answered 503"), "{kind:?}");

    // Retry what the filter selects: a confirmation stating how many, then the change.
    let select = "action=retry&store=main&status=dead";
    let forged = send(&console, "POST", "/console/deliveries/bulk", c, select).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{kind:?}: no token");
    let asked =
        send(&console, "POST", "/console/deliveries/bulk", c, &format!("csrf={csrf}&{select}"))
            .await;
    assert_eq!(asked.status, StatusCode::OK, "{kind:?}: {}", asked.text);
    assert!(asked.text.contains("<strong>1 deliveries</strong>"), "{kind:?}: {}", asked.text);
    assert_eq!(hidden(&asked.text, "ids").as_deref(), Some("d-1"), "{kind:?}");
    assert_eq!(status(&env, "d-1").await, DeliveryStatus::Dead, "{kind:?}: asking changes nothing");
    let confirmed = format!("csrf={csrf}&{select}&ids=d-1");
    let done = send(&console, "POST", "/console/deliveries/bulk", c, &confirmed).await;
    assert!(done.text.contains("1 of 1 retried"), "{kind:?}: {}", done.text);
    assert_eq!(status(&env, "d-1").await, DeliveryStatus::Pending, "{kind:?}");
    let no_reason = format!("csrf={csrf}&action=discard&store=main&status=pending");
    let refused = send(&console, "POST", "/console/deliveries/bulk", c, &no_reason).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{kind:?}: a discard needs a reason");
    let both = format!("{no_reason}&reason=test+cleanup&ids=d-0,d-1");
    let discarded = send(&console, "POST", "/console/deliveries/bulk", c, &both).await;
    assert!(discarded.text.contains("2 of 2 discarded"), "{kind:?}: {}", discarded.text);
    let again = send(&console, "POST", "/console/deliveries/bulk", c, &both).await;
    assert!(
        again.text.contains("0 of 2 discarded") && again.text.contains("2 refused"),
        "{kind:?}"
    );
    let recorded = actions(&env).await;
    assert_eq!(recorded.len(), 3, "{kind:?}: one action per change made: {recorded:?}");
    assert!(recorded.iter().all(|(_, _, who)| who == "ops-alice"), "{kind:?}");

    let overview = send(&console, "GET", "/console/", c, "").await;
    assert!(overview.text.contains("dead in the last 24 h"), "{kind:?}");
    assert!(overview.text.contains("oldest pending"), "{kind:?}");
}

#[tokio::test]
async fn lists_page_by_keyset_and_changes_are_confirmed_with_their_count_on_both() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        lists_page_by_keyset_and_changes_are_confirmed_with_their_count(kind).await;
    }
}
