//! Benchmark: what a principal costs the commit path. The shop's `place_order` through the HTTP
//! router (in process, no sockets) with a service key, a user's API token and a browser session
//! (cookie and CSRF token), against `engine::commit` called directly, at 1 and 8 clients, on one
//! throwaway PostgreSQL cluster. Modes alternate in rounds and each reports its median round, so a
//! noisy second hits every mode alike. `make bench` runs it and assembles BENCHMARKS.md.

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use jadpo_core::model::principal::Principal;
use jadpo_core::model::service_key::Scopes;
use jadpo_engine::commit::{CommitRequest, commit_unsent, request_digest};
use jadpo_engine::relay::enqueue_now;
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_test_env::{Env, Kind};
use serde_json::json;
use tower::ServiceExt;

const SECONDS: f64 = 1.0;
const ROUNDS: usize = 15;
const MODES: [&str; 4] = ["direct (no HTTP)", "service key", "API token", "browser session"];

/// How one request authenticates.
#[derive(Clone)]
enum Credential {
    Direct,
    Bearer(String),
    Browser { session: String, csrf: String },
}

fn http_request(credential: &Credential) -> Request<Body> {
    let builder = Request::builder()
        .method("POST")
        .uri("/actions/place_order")
        .header("content-type", "application/json");
    let (builder, body) = match credential {
        Credential::Bearer(t) if t.starts_with("jadpo_sk_") => (
            builder.header("authorization", format!("Bearer {t}")),
            json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]}),
        ),
        Credential::Bearer(t) => (
            builder.header("authorization", format!("Bearer {t}")),
            json!({"items": [{"sku": "A", "qty": 1}]}),
        ),
        Credential::Browser { session, csrf } => (
            builder
                .header("cookie", format!("__Host-jadpo_session={session}"))
                .header("x-csrf-token", csrf),
            json!({"items": [{"sku": "A", "qty": 1}]}),
        ),
        Credential::Direct => unreachable!("a direct commit has no HTTP request"),
    };
    builder.body(Body::from(body.to_string())).unwrap_or_else(|e| panic!("{e}"))
}

fn direct_request() -> CommitRequest {
    let body = json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]});
    CommitRequest {
        action: "place_order".into(),
        request_digest: request_digest("POST", "/actions/place_order", &body),
        input: body,
        caller: "web".into(),
        principal: Some(Principal::Service("web".into())),
        idempotency_key: None,
        traceparent: None,
        tracestate: None,
        request_id: "bench".into(),
    }
}

async fn one(env: &Env, app: &Router, credential: &Credential) {
    match credential {
        Credential::Direct => {
            // What the route does after authenticating: commit, then put the deliveries on the
            // queue (which marks them enqueued).
            let outcome = commit_unsent(&env.engine, direct_request())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
        }
        other => {
            let response = app.clone().oneshot(http_request(other)).await;
            let status = response.map(|r| r.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            assert_eq!(status, StatusCode::CREATED, "a benchmark request failed");
        }
    }
}

/// Requests per second of `clients` concurrent loops for `SECONDS`.
async fn rate(env: &'static Env, app: &Router, credential: &Credential, clients: usize) -> f64 {
    let stop = Instant::now() + Duration::from_secs_f64(SECONDS);
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (app, credential) = (app.clone(), credential.clone());
            tokio::spawn(async move {
                let mut n = 0_u64;
                while Instant::now() < stop {
                    one(env, &app, &credential).await;
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap_or(0);
    }
    total as f64 / start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn credentials(env: &Env) -> [Credential; 4] {
    let store = env.store("main");
    let clock = env.engine.clock.as_ref();
    let all = Scopes::parse(&["*"]).unwrap_or_else(|e| panic!("{e}"));
    let key =
        jadpo_engine::operate::keys::issue_unrecorded(store.as_ref(), "web", None, &all, clock)
            .await;
    let key = key.unwrap_or_else(|e| panic!("{e}")).secret;
    let customer = "INSERT INTO shop_customers (id, email) VALUES ('alice', 'alice@example.com')";
    store.execute_once(customer, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let until = clock.now() + chrono::Duration::days(1);
    let token =
        jadpo_engine::operate::tokens::issue_unrecorded(store.as_ref(), "alice", until, clock)
            .await;
    let token = token.unwrap_or_else(|e| panic!("{e}")).secret;
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let limits = jadpo_core::model::user_session::BrowserLimits::default();
    let session = store.browser_session_start(tx.as_mut(), "alice", limits, clock).await;
    let session = session.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    [
        Credential::Direct,
        Credential::Bearer(key),
        Credential::Bearer(token),
        Credential::Browser { session: session.token, csrf: session.csrf },
    ]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // As many connections as the pipeline benchmark gives 8 clients: fewer than the clients and
    // the requests queue for connections instead of the database.
    let app = jadpo_app::application().unwrap_or_else(|e| panic!("{e}"));
    let settings = jadpo_engine::EngineSettings::default();
    let mut env = Env::with_pg_pool(Kind::Postgres, app, settings, 10).await;
    // Nothing consumes the deliveries here: drop the queue's messages as they come.
    let (_tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut queued = std::mem::replace(&mut env.rx, rx);
    tokio::spawn(async move { while queued.recv().await.is_some() {} });
    let env: &'static Env = Box::leak(Box::new(env));
    let web = WebSettings { public_url: Some("https://shop.test".into()), secure_cookies: true };
    let app = router(HttpState::new(env.engine.clone(), web).unwrap_or_else(|e| panic!("{e}")));
    let credentials = credentials(env).await;
    let mut out = String::from(
        "## What a principal costs the commit path\n\n`cargo bench -p jadpo-http --bench auth` (part of \
         `make bench`): the shop's `place_order` (audited, two subscribers) on a throwaway PostgreSQL 15 \
         cluster, 2 cores, through the HTTP router in process (no sockets) with each kind of credential, \
         against what the route does once the caller is known (`engine::commit`, then `enqueue_now`) \
         called directly. Modes alternate, 1 s each, in 15 rounds, each round starting with the next mode; each cell is the \
         median round (requests/s).\n\n\
         | clients | direct (no HTTP) | service key | API token | browser session | token / key | browser / key | key / direct |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for clients in [1, 8] {
        let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); MODES.len()];
        for round in 0..ROUNDS {
            // Each round starts with the next mode, so no mode always follows the same one.
            for k in 0..MODES.len() {
                let i = (round + k) % MODES.len();
                rounds[i].push(rate(env, &app, &credentials[i], clients).await);
            }
        }
        let m: Vec<f64> = rounds.into_iter().map(median).collect();
        out.push_str(&format!(
            "| {clients} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2}× | {:.2}× | {:.2}× |\n",
            m[0],
            m[1],
            m[2],
            m[3],
            m[2] / m[1],
            m[3] / m[1],
            m[1] / m[0]
        ));
    }
    out.push_str(
        "\nEach credential is one read of its verifier joined with its principal's record — a service \
         key with the service's (`EXISTS` on `shop_services`), an API token and a browser session with the \
         customer's (`EXISTS` on `shop_customers`) — in its own short transaction before the action's \
         transaction; a browser session adds its CSRF check (and at most one write of `last_seen_at` a \
         minute, which the frozen clock here never makes due). The issue's target: a user's credential \
         costs the commit path at most 10% against a service key at 1 and 8 clients.\n\n\
         **Read both rows with care.** On this machine the 8-client throughput of every mode is bimodal, \
         about 1,000–1,300 or about 2,200 requests/s, and which modes land in which state changes from run \
         to run (the direct commit too, which has no credential at all), even with modes interleaved \
         second by second and with 10 pooled connections rather than 4; the 1-client row moves by up to a \
         third too. The twelve runs made during issue 14 gave token / key 0.81×–1.10× at 1 client \
         (browser / key 0.72×–1.36×) and 0.41×–2.13× at 8. `pgbench` inserting at 8 clients into a throwaway \
         cluster made the same way holds steady second by second (14,800–17,300 inserts/s over 20 s), so \
         the swings are not the database's; their cause is not found yet.\n",
    );
    print!("{out}");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/bench");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(format!("{dir}/auth.md"), out).unwrap_or_else(|e| panic!("{e}"));
}
