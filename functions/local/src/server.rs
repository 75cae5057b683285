//! The local HTTP surface: today `GET /healthz`; the commit function's routes join it later.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use jadpo_core::app::Application;
use jadpo_core::migrate;
use jadpo_runtime::{Stores, catalog_for};
use serde_json::json;

/// Applies every pending migration to every store, as the embedded mode does on open.
pub(crate) async fn migrate_all(app: &Application, stores: &Stores) -> anyhow::Result<()> {
    for (name, store) in stores.iter() {
        let catalog = catalog_for(app, store.as_ref())?;
        let report = migrate::apply(store.as_ref(), &catalog).await?;
        if !report.applied.is_empty() {
            tracing::info!(
                store = name,
                applied = report.applied.len(),
                "migrations applied"
            );
        }
    }
    Ok(())
}

/// The router, over the open stores.
pub(crate) fn router(stores: Stores) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .with_state(stores)
}

/// 200 when every store answers, else 503 as problem+json naming the failing stores.
async fn healthz(State(stores): State<Stores>) -> Response {
    let mut checks = Vec::new();
    let mut failing = Vec::new();
    for (name, store) in stores.iter() {
        let result = store.ping().await;
        if let Err(e) = &result {
            failing.push(format!("{name}: {e}"));
        }
        checks
            .push(json!({"store": name, "dialect": store.dialect().name(), "ok": result.is_ok()}));
    }
    if failing.is_empty() {
        (
            StatusCode::OK,
            axum::Json(json!({"status": "ok", "stores": checks})),
        )
            .into_response()
    } else {
        problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "A store is unavailable",
            &failing.join("; "),
        )
    }
}

async fn not_found() -> Response {
    problem(StatusCode::NOT_FOUND, "Not found", "no such route")
}

/// An `application/problem+json` response (RFC 9457).
pub(crate) fn problem(status: StatusCode, title: &str, detail: &str) -> Response {
    let body =
        json!({"type": "about:blank", "title": title, "status": status.as_u16(), "detail": detail});
    (
        status,
        [(header::CONTENT_TYPE, "application/problem+json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use jadpo_core::SystemClock;
    use jadpo_runtime::{Config, open_stores};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    async fn get(stores: Stores, path: &str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        tokio::spawn(async move { axum::serve(listener, router(stores)).await });
        let mut conn = tokio::net::TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        conn.write_all(request.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut response = String::new();
        conn.read_to_string(&mut response)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        response
    }

    fn stores_at(dir: &std::path::Path) -> (Application, Stores) {
        let app = jadpo_app::application().unwrap_or_else(|e| panic!("{e}"));
        let config = Config::from_vars(&app, &Default::default(), Some(dir))
            .unwrap_or_else(|e| panic!("{e}"));
        let stores = open_stores(&config, Arc::new(SystemClock)).unwrap_or_else(|e| panic!("{e}"));
        (app, stores)
    }

    #[tokio::test]
    async fn healthz_answers_after_migrating_the_local_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (app, stores) = stores_at(dir.path());
        migrate_all(&app, &stores)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(dir.path().join("main.db").exists());
        let response = get(stores, "/healthz").await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(
            response.contains(r#""status":"ok""#) && response.contains(r#""dialect":"sqlite""#),
            "{response}"
        );
    }

    #[tokio::test]
    async fn unknown_routes_are_problem_json() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (_, stores) = stores_at(dir.path());
        let response = get(stores, "/nope").await;
        assert!(response.starts_with("HTTP/1.1 404"), "{response}");
        assert!(response.contains("application/problem+json"), "{response}");
    }

    #[tokio::test]
    async fn an_unreachable_store_makes_healthz_fail_as_problem_json() {
        let app = jadpo_app::application().unwrap_or_else(|e| panic!("{e}"));
        let vars = [
            (
                "DATABASE_URL".to_owned(),
                "postgres://postgres@127.0.0.1:1/none".to_owned(),
            ),
            ("JADPO_PG_CONNECT_TIMEOUT_MS".to_owned(), "300".to_owned()),
        ]
        .into_iter()
        .collect();
        let config = Config::from_vars(&app, &vars, None).unwrap_or_else(|e| panic!("{e}"));
        let stores = open_stores(&config, Arc::new(SystemClock)).unwrap_or_else(|e| panic!("{e}"));
        let response = get(stores, "/healthz").await;
        assert!(response.starts_with("HTTP/1.1 503"), "{response}");
        assert!(
            response.contains("A store is unavailable") && response.contains("main: "),
            "{response}"
        );
    }
}
