//! The HTTP connections against a real socket: a path cannot leave the connection's host, a
//! redirect is not followed, an answer's body is capped, and no error carries the URL.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jadpo_core::ports::{ConnectionError, ConnectionRequest, Connections};
use jadpo_runtime::connections::{HttpConnections, MAX_ANSWER_BYTES};
use serde_json::json;

/// A server answering every request with `answer`; the request lines it received.
fn server(answer: Vec<u8>) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            if let Ok(mut lines) = log.lock() {
                lines.push(line.trim().to_owned());
            }
            // The headers, kept apart (lower-cased) for the tests that look at them.
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
                if let Ok(mut lines) = log.lock() {
                    lines.push(format!("header {}", header.trim().to_lowercase()));
                }
            }
            // The headers and any body are left unread: the answer goes back at once.
            let _ = (&stream).write_all(&answer);
        }
    });
    (port, seen)
}

fn connections(base: &str) -> HttpConnections {
    let base = url::Url::parse(base).unwrap_or_else(|e| panic!("{e}"));
    let bases = BTreeMap::from([("svc".to_owned(), base)]);
    HttpConnections::new(bases, Duration::from_secs(5)).unwrap_or_else(|e| panic!("{e}"))
}

fn request(path: &str) -> ConnectionRequest {
    ConnectionRequest {
        connection: "svc".into(),
        path: path.into(),
        body: json!({"hello": "world"}),
        idempotency_key: Some("k-1".into()),
    }
}

fn ok_answer(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[tokio::test]
async fn a_path_stays_on_the_connections_host() {
    let (port, seen) = server(ok_answer("{\"ok\": true}"));
    let svc = connections(&format!("http://127.0.0.1:{port}/base"));
    let answered = svc.call(request("/receipts")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answered.body, json!({"ok": true}));
    for bad in ["@evil.example/x", "//evil.example/x", "http://evil.example/x", "x"] {
        let refused = svc.call(request(bad)).await;
        assert!(matches!(refused, Err(ConnectionError::BadPath { .. })), "{bad}: {refused:?}");
    }
    let lines = seen.lock().map(|l| l.clone()).unwrap_or_default();
    let requests: Vec<_> = lines.iter().filter(|l| !l.starts_with("header ")).collect();
    assert_eq!(requests, ["POST /base/receipts HTTP/1.1"], "a refused path was sent");
}

#[tokio::test]
async fn a_redirect_is_an_answer_not_followed() {
    let (port, seen) = server(
        b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            .to_vec(),
    );
    let svc = connections(&format!("http://127.0.0.1:{port}"));
    let answered = svc.call(request("/pay")).await;
    assert!(matches!(answered, Err(ConnectionError::Status { status: 302, .. })), "{answered:?}");
    // No wait needed: a followed redirect would be answered (and so logged, the server logs a
    // request before it answers) before the call returned.
    let lines = seen.lock().map(|l| l.clone()).unwrap_or_default();
    let requests = lines.iter().filter(|l| !l.starts_with("header ")).count();
    assert_eq!(requests, 1, "the redirect was followed");
}

#[tokio::test]
async fn an_answer_over_the_cap_is_refused() {
    let big = format!("\"{}\"", "a".repeat(MAX_ANSWER_BYTES));
    let (port, _) = server(ok_answer(&big));
    let svc = connections(&format!("http://127.0.0.1:{port}"));
    let answered = svc.call(request("/big")).await;
    let text = answered.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains(&format!("over {MAX_ANSWER_BYTES} bytes")), "{text}");
}

#[tokio::test]
async fn an_error_never_carries_the_url() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = closed.local_addr().map(|a| a.port()).unwrap_or_default();
    drop(closed);
    let svc = connections(&format!("http://user:hunter2@127.0.0.1:{port}/internal-path"));
    let failed = svc.call(request("/x")).await;
    let text = failed.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("unreachable"), "{text}");
    for leaked in ["hunter2", "internal-path", &port.to_string()] {
        assert!(!text.contains(leaked), "the error carries {leaked:?}: {text}");
    }
}

#[tokio::test]
async fn a_connections_configured_header_goes_with_every_call() {
    let (port, seen) = server(ok_answer("{}"));
    let headers =
        BTreeMap::from([("svc".to_owned(), ("X-Api-Key".to_owned(), "s3cret".to_owned()))]);
    let svc = connections(&format!("http://127.0.0.1:{port}")).with_headers(headers);
    svc.call(request("/pay")).await.unwrap_or_else(|e| panic!("{e}"));
    svc.get("svc", "/keys").await.unwrap_or_else(|e| panic!("{e}"));
    let lines = seen.lock().map(|l| l.clone()).unwrap_or_default();
    let sent = lines.iter().filter(|l| *l == "header x-api-key: s3cret").count();
    assert_eq!(sent, 2, "{lines:#?}");
}
