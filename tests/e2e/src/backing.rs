//! The databases, queue and mailer a deployment of the shop talks to: one PostgreSQL database
//! per store (migrated), an SQS queue on moto, the mailer and payments connections pointed at a
//! recording sink; and the environment variables that say so, which also make a complete
//! deployed configuration. The functions are started as they are deployed: their secrets (the
//! database URLs, the sealing keys) are in Secrets Manager (moto's), named by `JADPO_SECRET_…`
//! variables, and each function is given only the variables it reads.

use std::future::IntoFuture;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jadpo_core::{Store, SystemClock};
use jadpo_local::sink::{self, Sinks};
use jadpo_queue_sqs::client_for_endpoint;
use jadpo_runtime::config::{Config, Mode, Vars, url_variable};
use jadpo_runtime::stores::{Stores, migrate_all, open_stores};
use jadpo_test_harness::{MotoServer, PgTestDb};
use serde_json::{Value, json};

/// The prefix of a variable naming a secret (`jadpo_lambda::secrets::PREFIX`).
const SECRET: &str = "JADPO_SECRET_";

/// Puts each secret of `vars` (database URLs, sealing keys) into moto's Secrets Manager, as
/// JSON `{"value": …}`, and returns `vars` naming them instead.
async fn secrets_in_moto(moto: &MotoServer, vars: &Vars) -> Vars {
    use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_secretsmanager::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(moto.endpoint())
        .credentials_provider(Credentials::new("testing", "testing", None, None, "static"))
        .http_client(jadpo_queue_sqs::https_client())
        .build();
    let client = aws_sdk_secretsmanager::Client::from_conf(config);
    let mut deployed = Vars::new();
    for (name, value) in vars {
        if !(name.starts_with("DATABASE_URL") || name == "JADPO_SEALING_KEYS") {
            deployed.insert(name.clone(), value.clone());
            continue;
        }
        let secret = json!({ "value": value }).to_string();
        let made = client.create_secret().name(name.to_lowercase()).secret_string(secret);
        let made = made.send().await.unwrap_or_else(|e| panic!("moto secret {name}: {e:?}"));
        let arn = made.arn().unwrap_or_else(|| panic!("moto gave secret {name} no ARN"));
        deployed.insert(format!("{SECRET}{name}"), format!("{arn}#value"));
    }
    deployed
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures");

/// The text of `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}"))
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// `tests/fixtures/<name>` as JSON.
pub fn json_fixture(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// The fixture's API Gateway request placing an order, authorised by `key`, with the
/// `Idempotency-Key` `idempotency_key`.
pub fn place_order(key: &str, idempotency_key: &str) -> Value {
    let mut event = json_fixture("apigw_v2_place_order.json");
    event["headers"]["authorization"] = json!(format!("Bearer {key}"));
    event["headers"]["idempotency-key"] = json!(idempotency_key);
    event
}

/// Holds a connection's calls in front of the sink: once `pass` of them went through, each
/// further call waits unanswered until [`release`](Self::release), then reaches the sink (its
/// caller may be gone by then: a call made whose answer was lost). A test learns when one is
/// waiting, so it can kill a function in the middle of a batch at a call it is known to make.
#[derive(Clone, Default)]
pub struct SinkGate(Arc<Mutex<GateRule>>);

#[derive(Default)]
struct GateRule {
    /// The connection held, and how many of its calls pass first.
    hold: Option<(String, usize)>,
    /// Calls to it seen since the rule was set, and how many of them are waiting.
    seen: usize,
    waiting: usize,
}

impl SinkGate {
    fn rule(&self) -> std::sync::MutexGuard<'_, GateRule> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Holds `connection`'s calls after the first `pass`.
    pub fn hold_after(&self, connection: &str, pass: usize) {
        *self.rule() =
            GateRule { hold: Some((connection.to_owned(), pass)), ..GateRule::default() };
    }

    /// Lets the waiting calls through and holds no more.
    pub fn release(&self) {
        self.rule().hold = None;
    }

    /// Waits until a call is held; panics after `timeout`.
    pub async fn held(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.rule().waiting == 0 {
            assert!(Instant::now() < deadline, "no call reached the gate in {timeout:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether a call to `path` is to be held (counting it).
    fn holds(&self, path: &str) -> bool {
        let mut rule = self.rule();
        let Some((connection, pass)) = rule.hold.clone() else { return false };
        let name = path.strip_prefix("/sink/").and_then(|p| p.split('/').next());
        if name != Some(connection.as_str()) {
            return false;
        }
        rule.seen += 1;
        let held = rule.seen > pass;
        rule.waiting += usize::from(held);
        held
    }

    /// The middleware in front of the sink.
    async fn layer(
        axum::extract::State(gate): axum::extract::State<Self>,
        request: axum::extract::Request,
        next: axum::middleware::Next,
    ) -> axum::response::Response {
        if !(request.method() == axum::http::Method::POST && gate.holds(request.uri().path())) {
            return next.run(request).await;
        }
        // On a task of its own, so that the call reaches the sink even when its caller is gone
        // by then (the server drops a request whose connection closed).
        let held = tokio::spawn(async move {
            while gate.rule().hold.is_some() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            next.run(request).await
        });
        held.await.unwrap_or_else(|e| panic!("the held call's task: {e}"))
    }
}

/// The databases, queue and mailer a deployment talks to, and the environment that says so.
pub struct Backing {
    /// The deployed configuration's variables, secrets in clear (for this process).
    pub vars: Vars,
    /// The same with every secret replaced by its `JADPO_SECRET_…` reference (for functions).
    deployed: Vars,
    /// The stores, opened in this process.
    pub stores: Stores,
    /// What the connections received.
    pub sinks: Sinks,
    /// What holds the connections' calls on the way to the sink.
    pub gate: SinkGate,
    /// The SQS client (the test's receive side).
    pub sqs: aws_sdk_sqs::Client,
    /// The delivery queue.
    pub queue_url: String,
    /// The files' bucket ([`FILES_BUCKET`]), as the functions see it.
    pub files: jadpo_blobs_s3::S3Blobs,
    _moto: MotoServer,
    _dbs: Vec<PgTestDb>,
}

/// The bucket the deployed functions keep files' bytes in.
pub(crate) const FILES_BUCKET: &str = "jadpo-files";

impl Backing {
    /// Starts moto and the sink, creates and migrates the databases.
    pub async fn start() -> Self {
        let app = jadpo_app::application().unwrap_or_else(|e| panic!("{e}"));
        let moto = MotoServer::start();
        let sqs = client_for_endpoint(&moto.endpoint(), "us-east-1", "testing", "testing");
        let created = sqs.create_queue().queue_name("jadpo-deliveries").send().await;
        let queue_url =
            created.unwrap_or_else(|e| panic!("{e:?}")).queue_url().unwrap_or_default().to_owned();
        let (sinks, gate) = (Sinks::default(), SinkGate::default());
        let listener =
            tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let sink_addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let held = axum::middleware::from_fn_with_state(gate.clone(), SinkGate::layer);
        tokio::spawn(axum::serve(listener, sink::router(sinks.clone()).layer(held)).into_future());

        let mut vars: Vars = moto.env().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        vars.insert("JADPO_QUEUE_URL".to_owned(), queue_url.clone());
        // The shop keeps invoices: their bytes go to a bucket of moto's S3.
        let s3 = jadpo_blobs_s3::client_for_endpoint(
            &moto.endpoint(),
            "us-east-1",
            "testing",
            "testing",
        );
        let bucket = s3.create_bucket().bucket(FILES_BUCKET).send().await;
        bucket.unwrap_or_else(|e| panic!("the files' bucket: {e:?}"));
        let files = jadpo_blobs_s3::S3Blobs::new(s3, FILES_BUCKET);
        vars.insert("JADPO_FILES_BUCKET".to_owned(), FILES_BUCKET.to_owned());
        vars.insert("RUST_LOG".to_owned(), "info".to_owned());
        // Deployed, the keys come from a secret; here, a fresh one per bed.
        let keys = jadpo_engine::sealing::SealingKeys::generate("k1");
        vars.insert("JADPO_SEALING_KEYS".to_owned(), keys.unwrap_or_else(|e| panic!("{e}")));
        // The sinks standing in for the shop's services answer plain HTTP.
        vars.insert("JADPO_INSECURE_HTTP_CONNECTIONS".to_owned(), "1".to_owned());
        for name in app.connections() {
            let variable = format!("JADPO_CONNECTION_{}_URL", name.to_uppercase());
            vars.insert(variable, format!("http://{sink_addr}/sink/{name}"));
        }
        let mut dbs = Vec::new();
        for store in app.stores() {
            let db = PgTestDb::empty().await;
            vars.insert(url_variable(&app, store), db.url().to_owned());
            dbs.push(db);
        }
        // The same variables make a complete deployed configuration, or this fails first.
        let config =
            Config::from_vars(&app, &vars, Mode::Deployed).unwrap_or_else(|e| panic!("{e}"));
        let stores =
            open_stores(&config, Arc::new(SystemClock), None).unwrap_or_else(|e| panic!("{e}"));
        migrate_all(&app, &stores).await.unwrap_or_else(|e| panic!("{e}"));
        let deployed = secrets_in_moto(&moto, &vars).await;
        Self { vars, deployed, stores, sinks, gate, sqs, queue_url, files, _moto: moto, _dbs: dbs }
    }

    /// A new service key for the `main` store, in clear.
    pub async fn service_key(&self) -> String {
        let scopes = jadpo_core::model::service_key::Scopes::all();
        let store = self.store("main");
        let key = jadpo_engine::operate::keys::issue_unrecorded(
            store.as_ref(),
            "web",
            None,
            &scopes,
            &SystemClock,
        )
        .await;
        key.unwrap_or_else(|e| panic!("{e}")).secret
    }

    /// The deployed environment of `function` as pairs, for [`crate::Function::start`]: its
    /// secrets by reference, and only what it reads (the scheduled functions call no connection
    /// and open no step answer: no connection variable, no sealing key).
    pub fn env_for(&self, function: &str) -> Vec<(String, String)> {
        let scheduled = matches!(function, "outbox-relay" | "schedule-tick" | "housekeeping");
        let calls_only = |k: &str| {
            k.starts_with("JADPO_CONNECTION_")
                || k == "JADPO_INSECURE_HTTP_CONNECTIONS"
                || k == "JADPO_SECRET_JADPO_SEALING_KEYS"
        };
        self.deployed
            .iter()
            .filter(|(k, _)| !(scheduled && calls_only(k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The store `name`.
    pub fn store(&self, name: &str) -> &Arc<dyn Store> {
        self.stores.get(name).unwrap_or_else(|| panic!("no store {name}"))
    }

    /// The `n` column of `sql`'s one row in `store`.
    pub async fn count(&self, store: &str, sql: &str) -> i64 {
        let mut tx = self.store(store).begin().await.unwrap_or_else(|e| panic!("{e}"));
        let row = tx.query_one(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
        row.get_i64("n").unwrap_or_else(|e| panic!("{e}"))
    }

    /// Every message on the queue, as SQS records built on the fixture's one.
    pub async fn receive_all(&self) -> Vec<Value> {
        let template = json_fixture("sqs_event.json")["Records"][0].clone();
        let mut records = Vec::new();
        loop {
            let received = self
                .sqs
                .receive_message()
                .queue_url(&self.queue_url)
                .max_number_of_messages(10)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e:?}"));
            if received.messages().is_empty() {
                return records;
            }
            for m in received.messages() {
                let mut record = template.clone();
                record["messageId"] = json!(m.message_id());
                record["receiptHandle"] = json!(m.receipt_handle());
                record["body"] = json!(m.body());
                records.push(record);
            }
        }
    }
}
