//! The five function binaries, from the workspace's test build, run as processes under `cargo lambda watch`
//! (its Runtime API emulator; `cargo lambda invoke` sends the events), against real PostgreSQL
//! (two databases: `main` and `warehouse`) and the SQS API (moto), fed real Lambda payloads:
//!
//! API Gateway HTTP API v2 request → `commit` (its immediate send fails: it was given a queue
//! that does not exist, so nothing reaches SQS yet) → EventBridge scheduled event → `outbox-relay`
//! puts the deliveries on the queue → the SQS messages, one duplicated and one poisoned, as an SQS
//! event → `delivery` (the poisoned message comes back as a batch item failure) → the effects in
//! both databases and at the mailer; then `schedule-tick` and `housekeeping` on their events.
//! The upload test also sends `commit` the REST API's payload (v1, its stage in the path), the
//! API the template deploys, and shows it reaches the same routes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use jadpo_core::model::delivery::{DeliveryFilter, DeliveryStatus};
use jadpo_e2e::{Backing, FUNCTIONS, Function, Watch, built, json_fixture, place_order};
use serde_json::{Value, json};

/// The five function binaries, from the workspace's test build.
fn binaries() -> BTreeMap<String, PathBuf> {
    built(&FUNCTIONS)
}

/// The five functions running under one `cargo lambda watch`.
struct Deployment {
    watch: Watch,
    bins: BTreeMap<String, PathBuf>,
    /// Each function's process and the environment it was started with.
    functions: BTreeMap<String, (Function, Vec<(String, String)>)>,
}

impl Deployment {
    /// Starts every function with its deployed environment; `commit` gets `commit_env` on top.
    async fn start(backing: &Backing, commit_env: &[(String, String)]) -> Self {
        Self::start_with(
            backing,
            |name| if name == "commit" { commit_env.to_vec() } else { vec![] },
        )
        .await
    }

    /// Starts every function with its deployed environment and `extra(name)` on top.
    async fn start_with(backing: &Backing, extra: impl Fn(&str) -> Vec<(String, String)>) -> Self {
        let bins = binaries();
        let watch = Watch::start();
        let functions = FUNCTIONS
            .iter()
            .map(|name| {
                let mut env = backing.env_for(name);
                // As deployed: no secret in the environment, only its reference.
                assert!(
                    env.iter()
                        .all(|(k, v)| !v.contains("postgres://") && k != "JADPO_SEALING_KEYS"),
                    "{name} was given a secret: {env:?}"
                );
                env.extend(extra(name));
                let function = Function::start(name, &bins[*name], &watch.runtime_api(name), &env);
                ((*name).to_owned(), (function, env))
            })
            .collect();
        Self { watch, bins, functions }
    }

    async fn invoke(&self, name: &str, event: &Value) -> Value {
        self.watch.invoke(name, event).await
    }

    /// Kills the function's process outright (SIGKILL), as Lambda's environment dying would.
    fn kill(&mut self, name: &str) {
        let (function, _) = self.functions.get_mut(name).unwrap_or_else(|| panic!("no {name}"));
        function.stop();
    }

    /// Starts a new process for the function, as Lambda does after one died (a cold start).
    fn restart(&mut self, name: &str) {
        let (function, env) = self.functions.get_mut(name).unwrap_or_else(|| panic!("no {name}"));
        *function = Function::start(name, &self.bins[name], &self.watch.runtime_api(name), env);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_function_binaries_carry_an_order_from_api_gateway_to_its_effects() {
    let backing = Backing::start().await;
    let key = backing.service_key().await;
    // `commit` is given a queue that does not exist: its immediate send fails, the deliveries
    // stay in the outbox, and only the relay can put them on the real queue.
    let missing_queue = backing.queue_url.replace("jadpo-deliveries", "no-such-queue");
    let deployment =
        Deployment::start(&backing, &[("JADPO_QUEUE_URL".to_owned(), missing_queue)]).await;

    let refused = deployment.invoke("commit", &place_order("not-a-key", "order-42")).await;
    assert_eq!(refused["statusCode"], 401, "{refused}");
    let created = deployment.invoke("commit", &place_order(&key, "order-42")).await;
    assert_eq!(created["statusCode"], 201, "{created}");
    let replayed = deployment.invoke("commit", &place_order(&key, "order-42")).await;
    assert_eq!(replayed["statusCode"], 201, "{replayed}");
    assert_eq!(replayed["body"], created["body"], "the idempotency key replays the answer");
    assert_eq!(backing.count("main", "SELECT count(*) AS n FROM shop_orders").await, 1);
    let all = DeliveryFilter { limit: 10, ..DeliveryFilter::default() };
    let deliveries =
        backing.store("main").deliveries_list(&all).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deliveries.len(), 2, "{deliveries:?}");
    assert!(deliveries.iter().all(|d| d.status == DeliveryStatus::Pending), "{deliveries:?}");
    assert!(backing.receive_all().await.is_empty(), "nothing reached the queue yet");

    // The relay leaves a delivery to the send after its commit for its grace (2 s) first.
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    let scheduled = json_fixture("eventbridge_scheduled.json");
    let relayed = deployment.invoke("outbox-relay", &scheduled).await;
    assert_eq!(relayed, json!({"sent": 2, "resent": 0, "waiting": 0, "failed": 0}));

    let mut records = backing.receive_all().await;
    assert_eq!(records.len(), 2, "the relay put both deliveries on the queue");
    records.push(records[0].clone()); // SQS may deliver a message twice
    let mut poison = records[0].clone();
    poison["messageId"] = json!("poison-1");
    poison["body"] = json!("this is not a delivery");
    records.push(poison);
    let answer = deployment.invoke("delivery", &json!({"Records": records})).await;
    assert_eq!(answer, json!({"batchItemFailures": [{"itemIdentifier": "poison-1"}]}));

    let reserved = "SELECT coalesce(sum(qty), 0) AS n FROM shop_reservations";
    assert_eq!(
        backing.count("warehouse", reserved).await,
        3,
        "reserved once despite the duplicate"
    );
    assert_eq!(backing.sinks.received("mailer").len(), 1, "one receipt mailed");
    let deliveries =
        backing.store("main").deliveries_list(&all).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !deliveries.is_empty() && deliveries.iter().all(|d| d.status == DeliveryStatus::Handled),
        "{deliveries:?}"
    );

    let ticked = deployment.invoke("schedule-tick", &scheduled).await;
    assert_eq!(ticked["created"], 1, "the sales summary schedule was stored: {ticked}");
    let schedules = "SELECT count(*) AS n FROM jadpo_schedules WHERE name = 'sales_summary'";
    assert_eq!(backing.count("main", schedules).await, 1);

    let housekept = deployment.invoke("housekeeping", &scheduled).await;
    let stores: Vec<&str> =
        housekept.as_array().into_iter().flatten().filter_map(|r| r["store"].as_str()).collect();
    assert_eq!(stores, ["main", "warehouse"], "{housekept}");
}

/// Orders placed before the delivery function is killed in the middle of their batch.
const KILLED_ORDERS: usize = 6;

/// The delivery function killed (SIGKILL) in the middle of an SQS batch, at a mailer call it is
/// making, after some of the batch took effect: SQS delivers the batch again (to a new process,
/// as Lambda starts one), the relay resends what that leaves, and afterwards every order has its
/// reservations once, the mailer acted once per receipt under one key (the held calls reached it
/// after their caller died: the receipts of a batch are sent side by side, so several are held),
/// and every delivery ended handled, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_function_killed_mid_batch_loses_nothing_and_repeats_nothing() {
    let backing = Backing::start().await;
    let key = backing.service_key().await;
    // A run a dead process held is taken up again after 2 s (120 s by default), and what it
    // had put on the queue is resent after 3 s.
    let lease = || {
        let vars = [("JADPO_STEP_LEASE_SECS", "2"), ("JADPO_REDELIVERY_AFTER_SECS", "3")];
        vars.map(|(k, v)| (k.to_owned(), v.to_owned())).to_vec()
    };
    let mut deployment = Deployment::start_with(&backing, |_| lease()).await;
    for n in 0..KILLED_ORDERS {
        let created = deployment.invoke("commit", &place_order(&key, &format!("kill-{n}"))).await;
        assert_eq!(created["statusCode"], 201, "{created}");
    }
    let records = backing.receive_all().await;
    assert_eq!(records.len(), 2 * KILLED_ORDERS, "commit put every delivery on the queue");
    let batch = json!({ "Records": records });

    // The third receipt's call is held; the function is killed while it waits for the answer.
    backing.gate.hold_after("mailer", 2);
    tokio::select! {
        answer = deployment.invoke("delivery", &batch) => {
            panic!("the batch finished before the kill: {answer}")
        }
        () = backing.gate.held(Duration::from_secs(60)) => deployment.kill("delivery"),
    }
    let handled = "SELECT count(*) AS n FROM jadpo_handled_deliveries";
    let before = backing.count("main", handled).await + backing.count("warehouse", handled).await;
    let total = i64::try_from(2 * KILLED_ORDERS).unwrap_or(i64::MAX);
    assert!(before > 0 && before < total, "killed mid-batch: {before} of {total} handled");
    backing.gate.release();

    // SQS delivers the batch again after its visibility timeout, to a new process.
    deployment.restart("delivery");
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let answer = deployment.invoke("delivery", &batch).await;
    assert_eq!(answer["batchItemFailures"], json!([]), "{answer}");
    // What that attempt left for later (a run still leased, say), the relay resends when due.
    let scheduled = json_fixture("eventbridge_scheduled.json");
    let unfinished = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> 'handled'";
    let deadline = Instant::now() + Duration::from_secs(60);
    while backing.count("main", unfinished).await > 0 {
        assert!(Instant::now() < deadline, "deliveries never finished after the kill");
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        deployment.invoke("outbox-relay", &scheduled).await;
        let records = backing.receive_all().await;
        if !records.is_empty() {
            deployment.invoke("delivery", &json!({ "Records": records })).await;
        }
    }

    let after = backing.count("main", handled).await + backing.count("warehouse", handled).await;
    let deliveries = backing.count("main", "SELECT count(*) AS n FROM jadpo_deliveries").await;
    let reserved = "SELECT coalesce(sum(qty), 0) AS n FROM shop_reservations";
    let reserved = backing.count("warehouse", reserved).await;
    let per_order = "SELECT count(DISTINCT order_id) AS n FROM shop_reservations";
    let orders_reserved = backing.count("warehouse", per_order).await;
    let mailed = backing.sinks.received("mailer");
    let keys: std::collections::BTreeSet<&str> =
        mailed.iter().filter_map(|m| m["idempotency_key"].as_str()).collect();
    let (requests, acted) = backing.sinks.counts("mailer");
    println!(
        "killed mid-batch: {before} of {total} deliveries handled at the kill, {after} of \
         {deliveries} after; reserved {reserved} for {orders_reserved} orders; the mailer got \
         {requests} requests under {} keys, acted {acted} times",
        keys.len()
    );
    assert_eq!((after, deliveries), (total, total), "every delivery handled once");
    assert_eq!(orders_reserved, total / 2, "every order reserved");
    assert_eq!(reserved, 3 * total / 2, "each order's three items reserved once");
    assert_eq!((keys.len(), acted), (KILLED_ORDERS, KILLED_ORDERS), "one receipt per order");
    // The batch's receipts are sent side by side: every call after the second is held, and each
    // held one reached the mailer, then its retries under the same key (one from the batch sent
    // again, another if the relay's resend meets a run still unanswered); the mailer acted once
    // per key, as asserted above.
    assert!(
        requests > KILLED_ORDERS && requests <= 3 * KILLED_ORDERS,
        "{requests} requests: the held calls reached the mailer, then their retries"
    );
}

/// A request to the deployed commit function at `method path` (API Gateway's event), as `key`.
fn commit_request(key: &str, method: &str, path: &str, body: Option<String>) -> Value {
    let mut request = place_order(key, "unused");
    request["rawPath"] = json!(path);
    request["requestContext"]["http"]["path"] = json!(path);
    request["requestContext"]["http"]["method"] = json!(method);
    request["routeKey"] = json!(format!("{method} {path}"));
    request["pathParameters"] = json!({});
    request["body"] = body.map_or(Value::Null, Value::from);
    request
}

fn answer_json(answered: &Value) -> Value {
    serde_json::from_str(answered["body"].as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {answered}"))
}

/// A plain-HTTP request to a presigned URL (moto's); the status and body.
async fn follow(
    method: &str,
    url: &str,
    headers: Vec<(String, String)>,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let (method, url, body) = (method.to_owned(), url.to_owned(), body.to_vec());
    let answer = tokio::task::spawn_blocking(move || {
        jadpo_test_harness::http_request(&method, &url, &headers, &body)
    });
    let answer = answer.await.unwrap_or_else(|e| panic!("{e}"));
    (answer.status, answer.body)
}

/// The deployed commit function never carries a file's bytes: it refuses them in a request,
/// signs an upload URL into the files' S3 bucket for an invoice, finishes the upload once the
/// bytes are there (its row), and, once an order holds it, redirects its reader to a download
/// URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployed_upload_lands_in_the_bucket_and_is_served_to_its_reader() {
    use jadpo_core::ports::Blobs;
    use sha2::Digest;
    let backing = Backing::start().await;
    let key = backing.service_key().await;
    // As the template deploys it: behind a REST API, whose events carry the stage in the path.
    let rest = [("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH".to_owned(), "1".to_owned())];
    let deployment = Deployment::start(&backing, &rest).await;
    let pdf = b"%PDF-1.4 a deployed invoice";
    let mut direct = commit_request(&key, "POST", "/files/shop_orders/invoice", Some("x".into()));
    direct["rawQueryString"] = json!("name=invoice.pdf");
    direct["headers"]["content-type"] = json!("application/pdf");
    let refused = deployment.invoke("commit", &direct).await;
    assert_eq!(refused["statusCode"], 409, "bytes through the function: {refused}");

    let sha: String = sha2::Sha256::digest(pdf).iter().map(|b| format!("{b:02x}")).collect();
    let plan = json!({"name": "invoice.pdf", "content_type": "application/pdf",
        "size": pdf.len(), "sha256": sha});
    let sign = "/files/shop_orders/invoice/uploads";
    let request = commit_request(&key, "POST", sign, Some(plan.to_string()));
    let signed = deployment.invoke("commit", &request).await;
    assert_eq!(signed["statusCode"], 201, "{signed}");
    let signed = answer_json(&signed);
    let (file, upload) = (signed["file"].clone(), &signed["upload"]);
    let headers: Vec<(String, String)> = upload["headers"]
        .as_object()
        .map(|h| h.iter().map(|(n, v)| (n.clone(), v.as_str().unwrap_or("").to_owned())).collect())
        .unwrap_or_default();
    let url = upload["url"].as_str().unwrap_or_default();
    assert_eq!(follow("PUT", url, headers, pdf).await.0, 200, "the PUT to the bucket: {url}");
    let finish = signed["finish"].as_str().unwrap_or_default();
    let request = commit_request(&key, "POST", finish, Some(file.to_string()));
    let finished = deployment.invoke("commit", &request).await;
    assert_eq!(finished["statusCode"], 201, "{finished}");
    let id = file["id"].as_str().unwrap_or_default().to_owned();
    let stored = backing.files.get(&id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored.as_deref(), Some(&pdf[..]), "the bytes are in the bucket");
    let kept = format!("SELECT count(*) AS n FROM jadpo_files WHERE file_id = '{id}'");
    assert_eq!(backing.count("main", &kept).await, 1, "and its row");

    let order = answer_json(&deployment.invoke("commit", &place_order(&key, "order-7")).await);
    let body = json!({"order_id": order["order_id"], "invoice": file}).to_string();
    let attach = commit_request(&key, "POST", "/actions/attach_invoice", Some(body));
    let attached = deployment.invoke("commit", &attach).await;
    assert_eq!(attached["statusCode"], 200, "{attached}");
    let request = commit_request(&key, "GET", &format!("/files/{id}"), None);
    let served = deployment.invoke("commit", &request).await;
    assert_eq!(served["statusCode"], 303, "{served}");
    let location = served["headers"]["location"].as_str().unwrap_or_default();
    assert_eq!(follow("GET", location, Vec::new(), b"").await, (200, pdf.to_vec()), "{served}");

    // The REST API's own payload (v1, stage `live` in its context path) reaches the same routes.
    let rest_order = |key: &str, idempotency: &str| {
        let mut event = json_fixture("apigw_rest_place_order.json");
        for headers in ["headers", "multiValueHeaders"] {
            let auth = format!("Bearer {key}");
            let one = |v: String| if headers == "headers" { json!(v) } else { json!([v]) };
            event[headers]["Authorization"] = one(auth);
            event[headers]["Idempotency-Key"] = one(idempotency.to_owned());
        }
        event
    };
    let anonymous = deployment.invoke("commit", &rest_order("not-a-key", "rest-1")).await;
    assert_eq!(anonymous["statusCode"], 401, "{anonymous}");
    let placed = deployment.invoke("commit", &rest_order(&key, "rest-1")).await;
    assert_eq!(placed["statusCode"], 201, "through the REST API: {placed}");
    let order_id = answer_json(&placed)["order_id"].as_str().unwrap_or_default().to_owned();
    let kept = format!("SELECT count(*) AS n FROM shop_orders WHERE id = '{order_id}'");
    assert_eq!(backing.count("main", &kept).await, 1, "the order is kept: {placed}");
}
