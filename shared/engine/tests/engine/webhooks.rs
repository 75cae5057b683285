//! Webhook receipts through the engine, on both adapters: an event is received once (its
//! receipt, the action's row and its event committed together), whatever its unsigned headers
//! say and however many copies arrive at once; a request that proves nothing, or that the action
//! refuses, writes nothing; a signed time out of tolerance is refused.

use jadpo_engine::EngineSettings;
use jadpo_engine::services::webhooks::receive::{Incoming, ReceiveError, Received, receive};
use jadpo_engine::services::webhooks::verify::VerifyError;
use jadpo_test_env::webhooks::{
    GH_SECRET, github_signature, standard_headers, webhook_app, webhook_secrets,
};
use jadpo_test_env::{Env, Kind, t0};

async fn env(kind: Kind) -> Env {
    Env::new(kind, webhook_app(), EngineSettings::default()).await
}

async fn gh(env: &Env, body: &[u8], extra: &[(&str, &str)]) -> Result<Received, ReceiveError> {
    let mut headers = vec![("X-Hub-Signature-256".to_owned(), github_signature(GH_SECRET, body))];
    headers.extend(extra.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())));
    let secrets = webhook_secrets();
    let incoming = Incoming { source: "gh", headers: &headers, body, secrets: &secrets["gh"] };
    receive(&env.engine, incoming).await
}

async fn counts(env: &Env) -> (i64, i64, i64) {
    let receipts = env.count("main", "SELECT count(*) AS n FROM jadpo_webhook_receipts").await;
    let rows = env.count("main", "SELECT count(*) AS n FROM t_payments").await;
    let events = env
        .count("main", "SELECT count(*) AS n FROM jadpo_outbox WHERE source = 'record_payment'")
        .await;
    (receipts, rows, events)
}

fn receipt_id(received: &Result<Received, ReceiveError>) -> (Option<String>, bool) {
    match received {
        Ok(Received::Receipt { body, duplicate }) => {
            (body["receipt"].as_str().map(str::to_owned), *duplicate)
        }
        other => panic!("not a receipt: {other:?}"),
    }
}

async fn an_event_is_received_once(kind: Kind) {
    let env = env(kind).await;
    let body = br#"{"amount": 1200}"#;
    let auth = ("Authorization", "Bearer not-kept");
    let first = gh(&env, body, &[("X-GitHub-Delivery", "d-1"), auth]).await;
    let (id, duplicate) = receipt_id(&first);
    assert!(id.is_some() && !duplicate, "{first:?}");
    assert_eq!(counts(&env).await, (1, 1, 1), "receipt, the action's row and its event");
    let sent = "SELECT count(*) AS n FROM jadpo_deliveries WHERE enqueued_at IS NOT NULL";
    assert_eq!(env.count("main", sent).await, 0, "the event has no subscriber: no delivery");
    // The delivery id is unsigned: changed or stripped, the event is the same one.
    for extra in [&[("X-GitHub-Delivery", "d-2")][..], &[]] {
        let again = gh(&env, body, extra).await;
        assert_eq!(receipt_id(&again), (id.clone(), true), "a repeat was taken as new");
    }
    assert_eq!(counts(&env).await, (1, 1, 1), "a duplicate changed something");
    let kept = env.store("main").receipt_get("gh", &receipt_key(body)).await;
    let kept = kept.ok().flatten().unwrap_or_else(|| panic!("no receipt kept"));
    assert_eq!(kept.body, body.to_vec(), "the body is kept exactly as received");
    assert!(!kept.headers.contains("not-kept"), "a credential header was kept: {}", kept.headers);
    assert!(kept.headers.contains("x-github-delivery"), "{}", kept.headers);
}

fn receipt_key(body: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(body)))
}

async fn copies_at_once_take_effect_once(kind: Kind) {
    let env = env(kind).await;
    let body = br#"{"amount": 7}"#;
    let copies = (0..20).map(|_| gh(&env, body, &[]));
    let answers = futures_util::future::join_all(copies).await;
    let fresh =
        answers.iter().filter(|a| matches!(a, Ok(Received::Receipt { duplicate: false, .. })));
    let duplicates =
        answers.iter().filter(|a| matches!(a, Ok(Received::Receipt { duplicate: true, .. })));
    assert_eq!((fresh.count(), duplicates.count()), (1, 19), "{answers:?}");
    assert_eq!(counts(&env).await, (1, 1, 1));
}

async fn what_proves_nothing_writes_nothing(kind: Kind) {
    let env = env(kind).await;
    let body = br#"{"amount": 5}"#;
    let secrets = webhook_secrets();
    let wrong = [("X-Hub-Signature-256".to_owned(), github_signature("another secret", body))];
    let none: [(String, String); 0] = [];
    for (source, headers) in [("gh", &wrong[..]), ("gh", &none[..]), ("sw", &wrong[..])] {
        let incoming = Incoming { source, headers, body, secrets: &secrets[source] };
        let refused = receive(&env.engine, incoming).await;
        assert!(matches!(refused, Err(ReceiveError::Refused(_))), "{source}: {refused:?}");
    }
    // Signed with another source's secret: `sw` is not `gh`.
    let sw = standard_headers("msg_1", t0().timestamp(), body);
    let crossed = Incoming { source: "gh", headers: &sw, body, secrets: &secrets["gh"] };
    assert!(matches!(receive(&env.engine, crossed).await, Err(ReceiveError::Refused(_))));
    let unknown = Incoming { source: "nope", headers: &wrong, body, secrets: &[] };
    let unknown = receive(&env.engine, unknown).await;
    assert!(matches!(unknown, Err(ReceiveError::UnknownSource(_))), "{unknown:?}");
    let big = vec![b' '; (1 << 20) + 1];
    let big_headers = [("X-Hub-Signature-256".to_owned(), github_signature(GH_SECRET, &big))];
    let large =
        Incoming { source: "gh", headers: &big_headers, body: &big, secrets: &secrets["gh"] };
    assert!(matches!(receive(&env.engine, large).await, Err(ReceiveError::TooLarge { .. })));
    // Standard Webhooks signs its time: five minutes and a second away is refused either way.
    for skew in [-301, 301] {
        let headers = standard_headers("msg_2", t0().timestamp() + skew, body);
        let stale = Incoming { source: "sw", headers: &headers, body, secrets: &secrets["sw"] };
        let refused = receive(&env.engine, stale).await;
        let timely = matches!(
            refused,
            Err(ReceiveError::Refused(VerifyError::Stale { .. } | VerifyError::Future { .. }))
        );
        assert!(timely, "{skew}: {refused:?}");
    }
    // The action refusing the event keeps no receipt: the provider's retry is received anew.
    let refused = gh(&env, br#"{"reject": true}"#, &[]).await;
    assert!(matches!(refused, Err(ReceiveError::Commit(_))), "{refused:?}");
    assert_eq!(counts(&env).await, (0, 0, 0), "a refused request wrote something");
    let headers = standard_headers("msg_3", t0().timestamp(), body);
    let fine = Incoming { source: "sw", headers: &headers, body, secrets: &secrets["sw"] };
    let fine = receive(&env.engine, fine).await;
    assert!(!receipt_id(&fine).1, "{fine:?}");
    assert_eq!(counts(&env).await, (1, 1, 1));
}

async fn receipts_are_kept_for_their_retention(kind: Kind) {
    use jadpo_engine::housekeeping::housekeep_all;
    let mut env = env(kind).await;
    receipt_id(&gh(&env, br#"{"amount": 1}"#, &[]).await);
    let deleted = |reports: &[jadpo_engine::housekeeping::HousekeepingReport]| -> u64 {
        let class = jadpo_core::model::housekeeping::RecordClass::WebhookReceipts;
        reports.iter().flat_map(|r| &r.deleted).filter(|(c, _)| *c == class).map(|(_, n)| n).sum()
    };
    env.clock.advance(chrono::Duration::days(29));
    let (reports, failures) = housekeep_all(&env.engine, "hk").await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!((deleted(&reports), counts(&env).await.0), (0, 1), "a receipt went before 30 days");
    env.clock.advance(chrono::Duration::days(2));
    let (reports, failures) = housekeep_all(&env.engine, "hk").await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!((deleted(&reports), counts(&env).await.0), (1, 0), "a receipt outlived 30 days");
    let _ = env.settle().await;
}

jadpo_test_env::both!(
    an_event_is_received_once,
    copies_at_once_take_effect_once,
    what_proves_nothing_writes_nothing,
    receipts_are_kept_for_their_retention,
);
