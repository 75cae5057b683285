//! A headless Chromium driven over WebDriver (Debian's `chromium` and `chromium-driver`), for the
//! tests that use a page as a person does: clicks, keystrokes, what the page then reads, and
//! screenshots.
//!
//! Why a few lines of HTTP/1.1 rather than a WebDriver crate: the tests need a dozen commands,
//! and the crates that offer them bring an async HTTP stack of their own. Each command is a
//! blocking exchange with chromedriver; inside a multi-threaded Tokio runtime it runs in
//! `block_in_place`, so a server the test runs on the same runtime keeps answering the browser.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::net::free_port;

/// One WebDriver command: `method path` with a JSON body; the answer's `value`. The answer is
/// read by its `Content-Length`: chromedriver keeps the connection open.
fn webdriver(port: u16, method: &str, path: &str, body: &Value) -> Value {
    try_webdriver(port, method, path, body)
        .unwrap_or_else(|refused| panic!("{method} {path}: {refused}"))
}

/// [`webdriver`], with an answer other than `200` returned rather than a panic.
fn try_webdriver(port: u16, method: &str, path: &str, body: &Value) -> Result<Value, String> {
    tokio::task::block_in_place(|| exchange(port, method, path, body))
}

/// One WebDriver command; `Err` with the answer's status line and error when it is not `200`.
fn exchange(port: u16, method: &str, path: &str, body: &Value) -> Result<Value, String> {
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
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("{head}\n{value}"));
    }
    Ok(value["value"].clone())
}

/// A chromedriver process and one headless Chromium session on it; both end when dropped.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let path = format!("/session/{}", self.session);
        let _ = std::panic::catch_unwind(|| exchange(self.port, "DELETE", &path, &json!({})));
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session (a 1280×900 window);
    /// fails saying what to install when chromedriver is missing.
    pub fn start() -> Self {
        let port = free_port().unwrap_or_else(|e| panic!("no free port for chromedriver: {e}"));
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start chromedriver ({e}): install Debian's chromium and \
                     chromium-driver (`make prereqs` does, as root)"
                )
            });
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver never listened on {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1280,900",
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args},
        }}});
        let started = webdriver(port, "POST", "/session", &capabilities);
        let session = started["sessionId"].as_str().unwrap_or_else(|| panic!("{started}"));
        Self { driver, port, session: session.to_owned() }
    }

    /// A command on this session: `method /session/{id}{path}` with `body`.
    pub fn command(&self, method: &str, path: &str, body: &Value) -> Value {
        webdriver(self.port, method, &format!("/session/{}{path}", self.session), body)
    }

    /// Opens `url`.
    pub fn open(&self, url: &str) {
        self.command("POST", "/url", &json!({"url": url}));
    }

    /// The element `css` selects (the first); fails when there is none.
    pub fn element(&self, css: &str) -> String {
        self.try_element(css).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Browser::element`], with none found an `Err` rather than a panic.
    fn try_element(&self, css: &str) -> Result<String, String> {
        let find = json!({"using": "css selector", "value": css});
        let path = format!("/session/{}/element", self.session);
        let found = try_webdriver(self.port, "POST", &path, &find)
            .map_err(|e| format!("POST {path}: {e}"))?;
        let id = found.as_object().and_then(|o| o.values().next()).and_then(Value::as_str);
        id.map(str::to_owned).ok_or_else(|| format!("no element {css}: {found}"))
    }

    /// Clicks the element `css` selects.
    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.command("POST", &format!("/element/{id}/click"), &json!({}));
    }

    /// Clears the field `css` selects and types `text` into it.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.command("POST", &format!("/element/{id}/clear"), &json!({}));
        self.command("POST", &format!("/element/{id}/value"), &json!({"text": text}));
    }

    /// The visible text of the element `css` selects. An element that went stale between
    /// finding and reading it (the page it was on was replaced: a form's answer arriving) is
    /// found again on the new page.
    pub fn text(&self, css: &str) -> String {
        self.try_text(css).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Browser::text`], with an element not (yet) on the page an `Err` rather than a panic:
    /// between a form's submission and its answer's arrival the old page is gone and the new
    /// one not yet parsed.
    fn try_text(&self, css: &str) -> Result<String, String> {
        for _ in 0..20 {
            let id = self.try_element(css)?;
            let path = format!("/session/{}/element/{id}/text", self.session);
            match try_webdriver(self.port, "GET", &path, &json!({})) {
                Ok(text) => return Ok(text.as_str().unwrap_or_default().to_owned()),
                Err(e) if e.contains("stale element reference") => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(format!("GET {path}: {e}")),
            }
        }
        Err(format!("{css} went stale 20 times in a row"))
    }

    /// The page's title.
    pub fn title(&self) -> String {
        self.command("GET", "/title", &json!({})).as_str().unwrap_or_default().to_owned()
    }

    /// The current address.
    pub fn url(&self) -> String {
        self.command("GET", "/url", &json!({})).as_str().unwrap_or_default().to_owned()
    }

    /// Reloads the page.
    pub fn reload(&self) {
        self.command("POST", "/refresh", &json!({}));
    }

    /// Waits until `css`'s text satisfies `done` (reloading the page between looks when
    /// `reload`); its text then. An element not on the page is looked for again until the
    /// deadline (a form's answer still loading).
    pub fn wait_for(
        &self,
        css: &str,
        what: &str,
        reload: bool,
        done: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            // Missing while a form's answer loads: looked for again until the deadline.
            let text = self.try_text(css);
            match &text {
                Ok(text) if done(text) => return text.clone(),
                Ok(text) => {
                    assert!(Instant::now() < deadline, "{what}: {css} still reads {text:?}");
                }
                Err(e) => assert!(Instant::now() < deadline, "{what}: {e}"),
            }
            std::thread::sleep(Duration::from_millis(100));
            if reload {
                self.reload();
            }
        }
    }

    /// Saves a PNG of the window to `path`.
    pub fn screenshot(&self, path: &Path) {
        let encoded = self.command("GET", "/screenshot", &json!({}));
        let png = data_encoding::BASE64
            .decode(encoded.as_str().unwrap_or_default().as_bytes())
            .unwrap_or_else(|e| panic!("the screenshot is not base64: {e}"));
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        std::fs::write(path, png).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}
