//! The file routes over HTTP with the sample shop, on both adapters: an upload answers the file a
//! record then keeps, and one too large, of a type the field does not take, without a name or a
//! content type, into no declared field, by no one or by a key without the `files` scope is
//! refused and stores nothing; a download is served to the customer whose order holds the file
//! and to services, and is `404` for another customer, `401` for no one. With the bytes on S3
//! (moto's), uploads go through presigned URLs the routes hand out and finish, and downloads
//! redirect to one; each way refuses the other's upload route.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_test_env::{Env, Kind};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tower::ServiceExt;

use crate::common;

use common::calls::{call, is_problem, key};
use common::scoped_key;

const PDF: &[u8] = b"%PDF-1.4\n% an invoice\n%%EOF\n";

struct Got {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    bytes: Vec<u8>,
}

impl Got {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }
}

/// One request with raw bytes and a content type of its own.
async fn raw(
    env: &Env,
    method: &str,
    path: &str,
    auth: Option<&str>,
    ct: Option<&str>,
    body: Vec<u8>,
) -> Got {
    let web = WebSettings { public_url: Some("https://shop.test".into()), secure_cookies: true };
    let state = HttpState::new(env.engine.clone(), web).unwrap_or_else(|e| panic!("{e}"));
    let mut request = Request::builder().method(method).uri(path);
    if let Some(key) = auth {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    if let Some(ct) = ct {
        request = request.header("content-type", ct);
    }
    let request = request.body(Body::from(body)).unwrap_or_else(|e| panic!("{e}"));
    let response = router(state).oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), 8 << 20).await.unwrap_or_default();
    Got { status, headers, bytes: bytes.to_vec() }
}

fn problem(got: &Got, status: StatusCode) -> bool {
    got.status == status
        && got.headers.get("content-type").and_then(|v| v.to_str().ok())
            == Some("application/problem+json")
}

async fn kept_files(env: &Env) -> i64 {
    env.count("main", "SELECT COUNT(*) AS n FROM jadpo_files").await
}

async fn user_token(env: &Env, user: &'static str) -> String {
    let store = env.store("main");
    let sql = "INSERT INTO shop_customers (id, email) VALUES ($1, $2)";
    let email = format!("{user}@example.com");
    store.execute_once(sql, &[user.into(), email.into()]).await.unwrap_or_else(|e| panic!("{e}"));
    let until = jadpo_test_env::t0() + chrono::Duration::days(400);
    let clock = env.engine.clock.as_ref();
    let issued =
        jadpo_engine::operate::tokens::issue_unrecorded(store.as_ref(), user, until, clock);
    issued.await.unwrap_or_else(|e| panic!("{e}")).secret
}

const UPLOAD: &str = "/files/shop_orders/invoice?name=invoice%2042.pdf";

async fn uploads_are_checked_and_store_nothing_when_refused(kind: Kind) {
    let env = Env::shop(kind).await;
    let web = key(&env).await;
    let k = Some(web.as_str());
    let pdf = Some("application/pdf");
    let none = raw(&env, "POST", UPLOAD, None, pdf, PDF.to_vec()).await;
    assert!(problem(&none, StatusCode::UNAUTHORIZED), "{kind:?}: no one uploaded");
    let unscoped = scoped_key(&env, "web", &["runs"], None).await;
    let out = raw(&env, "POST", UPLOAD, Some(&unscoped), pdf, PDF.to_vec()).await;
    assert!(problem(&out, StatusCode::FORBIDDEN), "{kind:?}: a key without `files` uploaded");
    let big = raw(&env, "POST", UPLOAD, k, pdf, vec![b'x'; 2 * 1024 * 1024 + 1]).await;
    assert!(problem(&big, StatusCode::PAYLOAD_TOO_LARGE), "{kind:?}: {:?}", big.json());
    assert!(big.json()["detail"].as_str().is_some_and(|d| d.contains("at most 2097152 bytes")));
    let html = raw(&env, "POST", UPLOAD, k, Some("text/html"), PDF.to_vec()).await;
    assert!(problem(&html, StatusCode::UNSUPPORTED_MEDIA_TYPE), "{kind:?}: {:?}", html.json());
    let unnamed = raw(&env, "POST", "/files/shop_orders/invoice", k, pdf, PDF.to_vec()).await;
    assert!(problem(&unnamed, StatusCode::BAD_REQUEST), "{kind:?}: {:?}", unnamed.json());
    let slash =
        raw(&env, "POST", "/files/shop_orders/invoice?name=a%2Fb.pdf", k, pdf, PDF.to_vec());
    assert!(problem(&slash.await, StatusCode::BAD_REQUEST), "{kind:?}: a path for a name");
    let untyped = raw(&env, "POST", UPLOAD, k, None, PDF.to_vec()).await;
    assert!(problem(&untyped, StatusCode::BAD_REQUEST), "{kind:?}: no content type");
    let nowhere = raw(&env, "POST", "/files/shop_orders/items?name=a.pdf", k, pdf, PDF.to_vec());
    assert!(problem(&nowhere.await, StatusCode::NOT_FOUND), "{kind:?}: an undeclared field");
    assert_eq!(kept_files(&env).await, 0, "{kind:?}: a refused upload stored something");
    let blobs = env.engine.blobs.as_ref().unwrap_or_else(|| panic!("no blobs"));
    let listed = blobs.list("", 10).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(listed.is_empty(), "{kind:?}: refused uploads left bytes: {listed:?}");

    let ok = raw(&env, "POST", UPLOAD, k, Some("application/pdf; q=1"), PDF.to_vec()).await;
    assert_eq!(ok.status, StatusCode::CREATED, "{kind:?}: {:?}", ok.json());
    let file = ok.json();
    let digest: String = Sha256::digest(PDF).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        (&file["name"], &file["content_type"], &file["size"], &file["sha256"]),
        (&json!("invoice 42.pdf"), &json!("application/pdf"), &json!(PDF.len()), &json!(digest))
    );
    let id = file["id"].as_str().unwrap_or_default();
    let location = ok.headers.get("location").and_then(|v| v.to_str().ok());
    assert_eq!(location, Some(format!("/files/{id}").as_str()));
    assert_eq!(kept_files(&env).await, 1, "{kind:?}: its row, held by no order yet");
}

async fn downloads_follow_the_order(kind: Kind) {
    let env = Env::shop(kind).await;
    let (alice, bob) = (user_token(&env, "alice").await, user_token(&env, "bob").await);
    let web = key(&env).await;
    let order = call(
        &env,
        "POST",
        "/actions/place_order",
        Some(&alice),
        None,
        r#"{"items": [{"sku": "A", "qty": 1}]}"#,
    )
    .await;
    assert_eq!(order.status, StatusCode::CREATED, "{}", order.body);
    let order_id = order.body["order_id"].as_str().unwrap_or_default().to_owned();
    let up = raw(&env, "POST", UPLOAD, Some(&alice), Some("application/pdf"), PDF.to_vec()).await;
    assert_eq!(up.status, StatusCode::CREATED, "{kind:?}: {:?}", up.json());
    let file = up.json();
    let id = file["id"].as_str().unwrap_or_default().to_owned();
    let path = format!("/files/{id}");
    // Not yet held by an order: nobody reads it.
    let early = raw(&env, "GET", &path, Some(&alice), None, Vec::new()).await;
    assert!(problem(&early, StatusCode::NOT_FOUND), "{kind:?}: an unattached file was served");
    let attach = |who: String, order: String, invoice: Value| {
        let body = json!({"order_id": order, "invoice": invoice}).to_string();
        let env = &env;
        async move { call(env, "POST", "/actions/attach_invoice", Some(&who), None, &body).await }
    };
    let by_bob = attach(bob.clone(), order_id.clone(), file.clone()).await;
    assert!(is_problem(&by_bob, StatusCode::NOT_FOUND), "{kind:?}: bob attached to alice's order");
    let made_up = json!({"id": "f_0123456789abcdef0123456789abcdef", "name": "x.pdf",
        "content_type": "application/pdf", "size": 1, "sha256": file["sha256"]});
    let fake = attach(alice.clone(), order_id.clone(), made_up).await;
    assert!(is_problem(&fake, StatusCode::UNPROCESSABLE_ENTITY), "{kind:?}: {}", fake.body);
    // Bob's own upload, which alice learned of, is not hers to keep; nor is hers renamed.
    let his = raw(&env, "POST", UPLOAD, Some(&bob), Some("application/pdf"), PDF.to_vec()).await;
    assert_eq!(his.status, StatusCode::CREATED, "{kind:?}: {:?}", his.json());
    let stolen = attach(alice.clone(), order_id.clone(), his.json()).await;
    assert!(is_problem(&stolen, StatusCode::UNPROCESSABLE_ENTITY), "{kind:?}: {}", stolen.body);
    assert_eq!(stolen.body["title"], "Not your upload", "{kind:?}: {}", stolen.body);
    let mut renamed = file.clone();
    renamed["name"] = json!("statement.pdf");
    let altered = attach(alice.clone(), order_id.clone(), renamed).await;
    assert!(is_problem(&altered, StatusCode::UNPROCESSABLE_ENTITY), "{kind:?}: {}", altered.body);
    let detail = altered.body["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("uploaded with name invoice 42.pdf"), "{kind:?}: {detail}");
    let by_service = attach(web.clone(), order_id.clone(), file.clone()).await;
    assert!(is_problem(&by_service, StatusCode::UNPROCESSABLE_ENTITY), "{kind:?}: a service");
    let attached = attach(alice.clone(), order_id.clone(), file.clone()).await;
    assert_eq!(attached.status, StatusCode::OK, "{kind:?}: {}", attached.body);
    let refs = "SELECT refs AS n FROM jadpo_files WHERE file_id = $1";
    let held = jadpo_test_env::count_where(&env, "main", refs, &id).await;
    assert_eq!(held, Ok(1), "{kind:?}: the order holds the file");

    let got = raw(&env, "GET", &path, Some(&alice), None, Vec::new()).await;
    assert_eq!((got.status, got.bytes.as_slice()), (StatusCode::OK, PDF), "{kind:?}");
    let header =
        |name: &str| got.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(header("content-type").as_deref(), Some("application/pdf"));
    assert_eq!(
        header("content-disposition").as_deref(),
        Some("attachment; filename*=UTF-8''invoice%2042.pdf")
    );
    assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"));
    let by_service = raw(&env, "GET", &path, Some(&web), None, Vec::new()).await;
    assert_eq!(by_service.status, StatusCode::OK, "{kind:?}: a service reads any order's file");
    let other = raw(&env, "GET", &path, Some(&bob), None, Vec::new()).await;
    assert!(problem(&other, StatusCode::NOT_FOUND), "{kind:?}: bob read alice's invoice");
    let anyone = raw(&env, "GET", &path, None, None, Vec::new()).await;
    assert!(problem(&anyone, StatusCode::UNAUTHORIZED), "{kind:?}: no one read it");
    let unscoped = scoped_key(&env, "web", &["actions"], None).await;
    let out = raw(&env, "GET", &path, Some(&unscoped), None, Vec::new()).await;
    assert!(problem(&out, StatusCode::FORBIDDEN), "{kind:?}: a key without `files` read it");
    for bad in ["/files/nope", "/files/f_0123456789abcdef0123456789abcdef", "/files/..%2Fetc"] {
        let missing = raw(&env, "GET", bad, Some(&web), None, Vec::new()).await;
        assert!(problem(&missing, StatusCode::NOT_FOUND), "{kind:?}: {bad}");
    }

    // Detached: the order lets the file go, and nobody reads it any more.
    let detached = attach(alice.clone(), order_id.clone(), Value::Null).await;
    assert_eq!(detached.status, StatusCode::OK, "{kind:?}: {}", detached.body);
    assert_eq!(jadpo_test_env::count_where(&env, "main", refs, &id).await, Ok(0));
    let gone = raw(&env, "GET", &path, Some(&alice), None, Vec::new()).await;
    assert!(problem(&gone, StatusCode::NOT_FOUND), "{kind:?}: a detached file was served");

    // Attached again, then the order erased (the audit trail's erasure): its reference goes.
    let again = attach(alice.clone(), order_id.clone(), file.clone()).await;
    assert_eq!(again.status, StatusCode::OK, "{kind:?}: {}", again.body);
    assert_eq!(jadpo_test_env::count_where(&env, "main", refs, &id).await, Ok(1));
    let spec = env.engine.app.audit_spec("order").unwrap_or_else(|| panic!("orders are audited"));
    let erased = jadpo_engine::audit::erase(env.store("main").as_ref(), spec, &order_id).await;
    erased.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(jadpo_test_env::count_where(&env, "main", refs, &id).await, Ok(0), "{kind:?}");
    let erased = raw(&env, "GET", &path, Some(&web), None, Vec::new()).await;
    assert!(problem(&erased, StatusCode::NOT_FOUND), "{kind:?}: an erased order's file was served");
}

/// A customer at the upload quota is refused with `403`, and nothing more is kept.
async fn the_upload_quota_holds(kind: Kind) {
    let mut env = Env::shop(kind).await;
    env.engine.settings.upload_quota =
        jadpo_core::model::file_field::Quota { files: 1, bytes: 1 << 20 };
    let alice = user_token(&env, "alice").await;
    let up = || raw(&env, "POST", UPLOAD, Some(&alice), Some("application/pdf"), PDF.to_vec());
    assert_eq!(up().await.status, StatusCode::CREATED, "{kind:?}");
    let over = up().await;
    assert!(problem(&over, StatusCode::FORBIDDEN), "{kind:?}: {:?}", over.json());
    assert_eq!(over.json()["title"], "Upload quota reached", "{kind:?}");
    assert_eq!(kept_files(&env).await, 1, "{kind:?}: the refused upload kept no row");
}

#[tokio::test]
async fn the_upload_quota_holds_on_both() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        the_upload_quota_holds(kind).await;
    }
}

#[tokio::test]
async fn uploads_are_checked_and_store_nothing_when_refused_on_both() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        uploads_are_checked_and_store_nothing_when_refused(kind).await;
    }
}

#[tokio::test]
async fn downloads_are_for_the_orders_customer_and_services_on_both() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        downloads_follow_the_order(kind).await;
    }
}

/// The shop with its bytes in bucket `bucket` of `moto`'s S3.
async fn shop_on_s3(kind: Kind, moto: &jadpo_test_harness::MotoServer, bucket: &str) -> Env {
    use jadpo_blobs_s3::{S3Blobs, client_for_endpoint};
    let mut env = Env::shop(kind).await;
    let client = client_for_endpoint(&moto.endpoint(), "us-east-1", "testing", "testing");
    let made = client.create_bucket().bucket(bucket).send().await;
    made.unwrap_or_else(|e| panic!("bucket {bucket}: {e:?}"));
    env.engine.blobs = Some(std::sync::Arc::new(S3Blobs::new(client, bucket)));
    env
}

/// `method url` with `headers` and `body`, made by a plain HTTP client (to moto).
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

const SIGN: &str = "/files/shop_orders/invoice/uploads";

fn plan(size: usize, content_type: &str) -> Vec<u8> {
    let digest: String = Sha256::digest(PDF).iter().map(|b| format!("{b:02x}")).collect();
    json!({"name": "invoice 42.pdf", "content_type": content_type, "size": size, "sha256": digest})
        .to_string()
        .into_bytes()
}

async fn presigned_round_trip(kind: Kind, moto: &jadpo_test_harness::MotoServer) {
    let env = shop_on_s3(kind, moto, &format!("shop-{kind:?}").to_lowercase()).await;
    let (alice, bob) = (user_token(&env, "alice").await, user_token(&env, "bob").await);
    let (a, json_ct) = (Some(alice.as_str()), Some("application/json"));
    let direct = raw(&env, "POST", UPLOAD, a, Some("application/pdf"), PDF.to_vec()).await;
    assert!(problem(&direct, StatusCode::CONFLICT), "{kind:?}: bytes through the function");
    assert!(direct.json()["detail"].as_str().is_some_and(|d| d.contains("/uploads")));
    let none = raw(&env, "POST", SIGN, None, json_ct, plan(PDF.len(), "application/pdf")).await;
    assert!(problem(&none, StatusCode::UNAUTHORIZED), "{kind:?}: no one got an upload URL");
    let unscoped = scoped_key(&env, "web", &["actions"], None).await;
    let out = raw(&env, "POST", SIGN, Some(&unscoped), json_ct, plan(PDF.len(), "application/pdf"));
    assert!(problem(&out.await, StatusCode::FORBIDDEN), "{kind:?}: a key without `files`");
    let big = raw(&env, "POST", SIGN, a, json_ct, plan(3 << 20, "application/pdf")).await;
    assert!(problem(&big, StatusCode::PAYLOAD_TOO_LARGE), "{kind:?}: {:?}", big.json());
    let html = raw(&env, "POST", SIGN, a, json_ct, plan(PDF.len(), "text/html")).await;
    assert!(problem(&html, StatusCode::UNSUPPORTED_MEDIA_TYPE), "{kind:?}: {:?}", html.json());
    let garbled = raw(&env, "POST", SIGN, a, json_ct, b"{\"name\": 1}".to_vec()).await;
    assert!(problem(&garbled, StatusCode::BAD_REQUEST), "{kind:?}: {:?}", garbled.json());

    let signed = raw(&env, "POST", SIGN, a, json_ct, plan(PDF.len(), "application/pdf")).await;
    assert_eq!(signed.status, StatusCode::CREATED, "{kind:?}: {:?}", signed.json());
    let answer = signed.json();
    let (file, upload) = (answer["file"].clone(), answer["upload"].clone());
    let id = file["id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(answer["finish"], json!(format!("{SIGN}/{id}")));
    let headers: Vec<(String, String)> = upload["headers"]
        .as_object()
        .map(|h| h.iter().map(|(n, v)| (n.clone(), v.as_str().unwrap_or("").to_owned())).collect())
        .unwrap_or_default();
    let finish = format!("{SIGN}/{id}");
    let early = raw(&env, "POST", &finish, a, json_ct, file.to_string().into_bytes()).await;
    assert!(problem(&early, StatusCode::CONFLICT), "{kind:?}: finished before the PUT");
    let url = upload["url"].as_str().unwrap_or_default();
    assert_eq!(follow("PUT", url, headers, PDF).await.0, 200, "{kind:?}: the PUT to the bucket");
    let anyone = raw(&env, "POST", &finish, None, json_ct, file.to_string().into_bytes()).await;
    assert!(problem(&anyone, StatusCode::UNAUTHORIZED), "{kind:?}: no one finished it");
    let elsewhere = format!("{SIGN}/f_0123456789abcdef0123456789abcdef");
    let other = raw(&env, "POST", &elsewhere, a, json_ct, file.to_string().into_bytes()).await;
    assert!(problem(&other, StatusCode::BAD_REQUEST), "{kind:?}: the body names another file");
    assert_eq!(kept_files(&env).await, 0, "{kind:?}: no row before the finish");
    let done = raw(&env, "POST", &finish, a, json_ct, file.to_string().into_bytes()).await;
    assert_eq!(done.status, StatusCode::CREATED, "{kind:?}: {:?}", done.json());
    assert_eq!(done.json(), file, "{kind:?}");
    assert_eq!(kept_files(&env).await, 1, "{kind:?}");

    let order = call(
        &env,
        "POST",
        "/actions/place_order",
        a,
        None,
        r#"{"items": [{"sku": "A", "qty": 1}]}"#,
    );
    let order = order.await;
    let order_id = order.body["order_id"].as_str().unwrap_or_default().to_owned();
    let body = json!({"order_id": order_id, "invoice": file}).to_string();
    let attached = call(&env, "POST", "/actions/attach_invoice", a, None, &body).await;
    assert_eq!(attached.status, StatusCode::OK, "{kind:?}: {}", attached.body);
    let path = format!("/files/{id}");
    let got = raw(&env, "GET", &path, a, None, Vec::new()).await;
    assert_eq!(got.status, StatusCode::SEE_OTHER, "{kind:?}: {:?}", got.json());
    let location = got.headers.get("location").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let cache = got.headers.get("cache-control").and_then(|v| v.to_str().ok());
    assert_eq!(cache, Some("no-store"), "{kind:?}: a URL that expires is not cached");
    assert_eq!(follow("GET", location, Vec::new(), b"").await, (200, PDF.to_vec()), "{kind:?}");
    let by_bob = raw(&env, "GET", &path, Some(&bob), None, Vec::new()).await;
    assert!(problem(&by_bob, StatusCode::NOT_FOUND), "{kind:?}: bob got a URL to alice's file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_s3_the_bytes_go_through_presigned_urls_on_both() {
    let moto = jadpo_test_harness::MotoServer::start();
    for kind in [Kind::Sqlite, Kind::Postgres] {
        presigned_round_trip(kind, &moto).await;
    }
}

#[tokio::test]
async fn locally_the_server_hands_out_no_upload_urls() {
    let env = Env::shop(Kind::Sqlite).await;
    let web = key(&env).await;
    let asked = raw(
        &env,
        "POST",
        SIGN,
        Some(&web),
        Some("application/json"),
        plan(PDF.len(), "application/pdf"),
    );
    let asked = asked.await;
    assert!(problem(&asked, StatusCode::CONFLICT), "{:?}", asked.json());
    assert!(
        asked.json()["detail"]
            .as_str()
            .is_some_and(|d| d.contains("POST them to /files/shop_orders/invoice"))
    );
}
