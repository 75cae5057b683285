//! A stream of signed webhook requests, with copies and forgeries among them, and a crash at
//! every boundary of receiving one — after verification, after the receipt is claimed, before and
//! after the commit, before the answer — in random sets, on both adapters. The provider retries a
//! request until it is answered `2xx`, as providers do. However it crashes: every event takes
//! effect exactly once (one receipt, one row, one event), every copy is answered `2xx` with the
//! original receipt, and no forgery writes anything.

use std::collections::BTreeMap;

use jadpo_engine::EngineSettings;
use jadpo_engine::services::webhooks::receive::{Incoming, ReceiveError, Received, receive};
use jadpo_test_env::webhooks::{GH_SECRET, github_signature, webhook_app, webhook_secrets};
use jadpo_test_env::{Env, Kind};

const POINTS: &[&str] = &[
    "webhooks.after_verify",
    "commit.after_claim",
    "commit.before_commit",
    "commit.after_commit",
    "webhooks.after_commit",
];

/// Requests per adapter (a tenth in `make test`).
const REQUESTS: usize = 1000;

/// What one request is.
enum Sent {
    New(usize),
    Copy(usize),
    Forged,
}

struct Tally {
    /// Each event's receipt id, from its first `2xx`.
    receipts: BTreeMap<usize, String>,
    failures: Vec<String>,
    crashes: usize,
}

fn body(event: usize) -> Vec<u8> {
    format!(r#"{{"event": {event}, "amount": {}}}"#, event * 10).into_bytes()
}

/// Sends `body` signed under `secret` until it is answered other than by a crash (the provider's
/// retries), with `crash` armed on the first try only; the answer and how many tries crashed.
async fn until_answered(
    env: &Env,
    body: &[u8],
    secret: &str,
    crash: &[&'static str],
) -> (Result<Received, ReceiveError>, usize) {
    let headers = [("X-Hub-Signature-256".to_owned(), github_signature(secret, body))];
    let secrets = webhook_secrets();
    let incoming = Incoming { source: "gh", headers: &headers, body, secrets: &secrets["gh"] };
    for point in crash {
        let _ = fail::cfg(*point, "1*return");
    }
    let mut crashed = 0;
    let answer = loop {
        let answer = receive(&env.engine, incoming).await;
        let injected = matches!(&answer, Err(e) if e.to_string().contains("fault injected"));
        if !injected || crashed > POINTS.len() {
            break answer;
        }
        crashed += 1;
    };
    for point in crash {
        fail::remove(point);
    }
    (answer, crashed)
}

async fn one(
    env: &Env,
    sent: &Sent,
    crash: &[&'static str],
    tally: &mut Tally,
) -> Result<(), String> {
    let (event, secret) = match sent {
        Sent::New(e) | Sent::Copy(e) => (*e, GH_SECRET),
        Sent::Forged => (0, "a forger's secret"),
    };
    let (answer, crashed) = until_answered(env, &body(event), secret, crash).await;
    tally.crashes += crashed;
    match (sent, answer) {
        (Sent::Forged, Err(ReceiveError::Refused(_))) => Ok(()),
        (Sent::New(e), Ok(Received::Receipt { body, .. })) => {
            let id = body["receipt"].as_str().unwrap_or_default().to_owned();
            tally.receipts.insert(*e, id);
            Ok(())
        }
        (Sent::Copy(e), Ok(Received::Receipt { body, duplicate: true })) => {
            let id = body["receipt"].as_str().unwrap_or_default();
            match tally.receipts.get(e) {
                Some(original) if original == id => Ok(()),
                original => Err(format!("copy of {e} answered receipt {id}, not {original:?}")),
            }
        }
        (_, answer) => Err(format!("answered {answer:?}")),
    }
}

async fn adapter(kind: Kind, rng: &mut fastrand::Rng) -> Vec<String> {
    let env = Env::new(kind, webhook_app(), EngineSettings::default()).await;
    let mut tally = Tally { receipts: BTreeMap::new(), failures: Vec::new(), crashes: 0 };
    let requests = jadpo_test_env::sized(REQUESTS);
    let (mut events, mut copies, mut forged) = (0, 0, 0);
    for n in 0..requests {
        // Each point alone first, then random sets.
        let crash: Vec<&'static str> = match POINTS.get(n) {
            Some(point) => vec![*point],
            None => POINTS.iter().copied().filter(|_| rng.u8(..10) < 2).collect(),
        };
        let roll = rng.u8(..10);
        let sent = if events == 0 || roll >= 4 {
            events += 1;
            Sent::New(events - 1)
        } else if roll >= 1 {
            copies += 1;
            Sent::Copy(rng.usize(..events))
        } else {
            forged += 1;
            Sent::Forged
        };
        if let Err(e) = one(&env, &sent, &crash, &mut tally).await {
            tally.failures.push(format!("{kind:?} request {n} at {crash:?}: {e}"));
        }
    }
    let count = |sql: &'static str| env.count("main", sql);
    let receipts = count("SELECT count(*) AS n FROM jadpo_webhook_receipts").await;
    let rows = count("SELECT count(*) AS n FROM t_payments").await;
    let distinct = count("SELECT count(DISTINCT event_key) AS n FROM t_payments").await;
    let emitted =
        count("SELECT count(*) AS n FROM jadpo_outbox WHERE source = 'record_payment'").await;
    let expected = i64::try_from(events).unwrap_or(-1);
    if (receipts, rows, distinct, emitted) != (expected, expected, expected, expected) {
        tally.failures.push(format!(
            "{kind:?}: {events} events, but {receipts} receipts, {rows} rows ({distinct} distinct), \
             {emitted} events emitted"
        ));
    }
    println!(
        "{kind:?}: {requests} requests ({events} events, {copies} copies, {forged} forged), \
         {} crashes retried; {} lost or repeated",
        tally.crashes,
        tally.failures.len()
    );
    tally.failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_webhook_takes_effect_once_through_crashes() {
    jadpo_test_env::crash_loop_on_both(POINTS, |kind, mut rng| async move {
        adapter(kind, &mut rng).await
    })
    .await;
}
