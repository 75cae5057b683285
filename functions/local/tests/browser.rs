//! The local sign-in page in a real browser: headless Chromium driven over WebDriver
//! (chromedriver), with a virtual authenticator standing in for the person's device. A person
//! signs in with the mailed code, adds a passkey, signs out, and signs in with the passkey — by
//! clicks and keystrokes, through the page's own script and the browser's own WebAuthn JSON.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`make test` installs them when missing);
//! without them it fails and says so.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Running, free_port, http, read_key, start_local};
use serde_json::{Value, json};

/// One WebDriver command: `method path` with a JSON body; the answer's `value`. The answer is
/// read by its `Content-Length`: chromedriver keeps the connection open.
fn webdriver(port: u16, method: &str, path: &str, body: &Value) -> Value {
    let body = body.to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("{e}"));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut reader = BufReader::new(stream);
    let (mut head, mut length) = (String::new(), 0);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        if line == "\r\n" || line.is_empty() {
            break;
        }
        head.push_str(&line);
    }
    let mut payload = vec![0; length];
    reader.read_exact(&mut payload).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let value: Value = serde_json::from_slice(&payload).unwrap_or_else(|e| {
        panic!("chromedriver answered {head:?} {:?}: {e}", String::from_utf8_lossy(&payload))
    });
    assert!(head.starts_with("HTTP/1.1 200"), "{method} {path}: {head}\n{value}");
    value["value"].clone()
}

/// A browser session: its chromedriver's port and the session id.
struct Browser {
    port: u16,
    session: String,
}

impl Browser {
    fn command(&self, method: &str, path: &str, body: &Value) -> Value {
        webdriver(self.port, method, &format!("/session/{}{path}", self.session), body)
    }

    fn element(&self, css: &str) -> String {
        let found =
            self.command("POST", "/element", &json!({"using": "css selector", "value": css}));
        let id = found.as_object().and_then(|o| o.values().next()).and_then(Value::as_str);
        id.unwrap_or_else(|| panic!("no element {css}: {found}")).to_owned()
    }

    fn click(&self, css: &str) {
        let id = self.element(css);
        self.command("POST", &format!("/element/{id}/click"), &json!({}));
    }

    fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.command("POST", &format!("/element/{id}/clear"), &json!({}));
        self.command("POST", &format!("/element/{id}/value"), &json!({"text": text}));
    }

    fn text(&self, css: &str) -> String {
        let id = self.element(css);
        self.command("GET", &format!("/element/{id}/text"), &json!({}))
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits until `css`'s text satisfies `done`; its text then.
    fn wait_for(&self, css: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let text = self.text(css);
            if done(&text) {
                return text;
            }
            assert!(Instant::now() < deadline, "{what}: {css} still reads {text:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Starts chromedriver on a free port and waits until it is ready.
fn chromedriver() -> (Running, u16) {
    let port = free_port();
    let child: Child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start chromedriver ({e}): install Debian's chromium and chromium-driver \
                 (`make prereqs` does, as root)"
            )
        });
    let running = Running(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver never listened on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
    (running, port)
}

/// The code in the latest sign-in mail at the local mailer sink.
fn mailed_code(port: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let sink = http(port, "GET /sink/mailer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let body = sink.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        let mails: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let code = mails["received"].as_array().and_then(|all| {
            all.iter().rev().find_map(|m| m["body"]["code"].as_str().map(str::to_owned))
        });
        if let Some(code) = code {
            return code;
        }
        assert!(Instant::now() < deadline, "no sign-in mail reached the sink: {sink}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_person_adds_a_passkey_in_a_real_browser_and_signs_in_with_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut local = start_local(dir.path());
    let port = local.port;
    read_key(&mut local);
    let (_driver, driver_port) = chromedriver();
    let args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"];
    let capabilities = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args},
    }}});
    let started = webdriver(driver_port, "POST", "/session", &capabilities);
    let session = started["sessionId"].as_str().unwrap_or_else(|| panic!("{started}")).to_owned();
    let browser = Browser { port: driver_port, session };
    let device = json!({
        "protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
        "hasUserVerification": true, "isUserVerified": true,
    });
    browser.command("POST", "/webauthn/authenticator", &device);
    // Where jadpo-local says to go: localhost, since browsers refuse passkeys on an IP address.
    browser.command("POST", "/url", &json!({"url": format!("http://localhost:{port}/")}));
    browser.wait_for("#who", "the page loads", |t| t == "Not signed in.");

    browser.type_into("#email", "ann@example.com");
    browser.click("#email-form button");
    let code = mailed_code(port);
    browser.type_into("#code", &code);
    browser.click("#code-form button");
    let who = browser.wait_for("#who", "sign-in by code", |t| t.starts_with("Signed in as user:"));

    browser.click("#add-passkey");
    let added = browser.wait_for("#out", "adding a passkey", |t| {
        t.contains("credential_id") || t.contains("error") || t.contains("\"status\": 4")
    });
    assert!(added.contains("\"status\": 201") && added.contains("credential_id"), "{added}");
    browser.click("#sign-out");
    browser.wait_for("#who", "sign-out", |t| t == "Not signed in.");

    browser.click("#passkey-sign-in");
    let again = browser.wait_for("#who", "sign-in by passkey", |t| t.starts_with("Signed in"));
    assert_eq!(again, who, "the passkey signed in someone else");
    browser.command("DELETE", "", &json!({}));
}
