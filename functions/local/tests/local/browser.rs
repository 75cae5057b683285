//! The local sign-in page in a real browser: headless Chromium driven over WebDriver
//! (chromedriver), with a virtual authenticator standing in for the person's device. A person
//! signs in with the mailed code, adds a passkey, signs out, and signs in with the passkey — by
//! clicks and keystrokes, through the page's own script and the browser's own WebAuthn JSON.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`make test` installs them when missing);
//! without them it fails and says so.

use crate::common;

use std::time::{Duration, Instant};

use common::{http, read_key, start_local};
use jadpo_test_harness::Browser;
use serde_json::{Value, json};

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
    let browser = Browser::start();
    let device = json!({
        "protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
        "hasUserVerification": true, "isUserVerified": true,
    });
    browser.command("POST", "/webauthn/authenticator", &device);
    // Where jadpo-local says to go: localhost, since browsers refuse passkeys on an IP address.
    browser.open(&format!("http://localhost:{port}/"));
    browser.wait_for("#who", "the page loads", false, |t| t == "Not signed in.");

    browser.type_into("#email", "ann@example.com");
    browser.click("#email-form button");
    let code = mailed_code(port);
    browser.type_into("#code", &code);
    browser.click("#code-form button");
    let who =
        browser.wait_for("#who", "sign-in by code", false, |t| t.starts_with("Signed in as user:"));

    browser.click("#add-passkey");
    let added = browser.wait_for("#out", "adding a passkey", false, |t| {
        t.contains("credential_id") || t.contains("error") || t.contains("\"status\": 4")
    });
    assert!(added.contains("\"status\": 201") && added.contains("credential_id"), "{added}");
    browser.click("#sign-out");
    browser.wait_for("#who", "sign-out", false, |t| t == "Not signed in.");

    browser.click("#passkey-sign-in");
    let again =
        browser.wait_for("#who", "sign-in by passkey", false, |t| t.starts_with("Signed in"));
    assert_eq!(again, who, "the passkey signed in someone else");
}
