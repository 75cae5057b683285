//! `jadpo console` as an operator starts it: it prints a login link for the stores it is given,
//! the link starts a session that lists their dead deliveries, a page without it is refused; and
//! without a login it refuses an address others can reach, saying what to do.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::{jadpo, seed, stderr};
use jadpo_test_harness::{SqliteTestDb, http_request};

#[test]
fn without_a_login_a_public_address_is_refused() {
    let db = SqliteTestDb::empty();
    let out = jadpo(&db.url(), &["console", "--listen", "0.0.0.0:0", "--no-login"]);
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(said.contains("listen on a loopback address") && said.contains("--no-login"), "{said}");
}

#[tokio::test]
async fn the_printed_link_opens_the_console_over_the_stores_given() {
    let db = SqliteTestDb::migrated().await;
    seed(&db).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_jadpo"))
        .args(["console", "--listen", "127.0.0.1:0", "--operator", "ops-bob"])
        .env("DATABASE_URL", db.url())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run jadpo: {e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap_or_else(|e| panic!("{e}"));
    let link =
        line.trim().strip_prefix("console: ").unwrap_or_else(|| panic!("{line:?}")).to_owned();
    let base = link.split("/console/").next().unwrap_or_default().to_owned();
    let pages = tokio::task::spawn_blocking(move || {
        let refused = http_request("GET", &format!("{base}/console/deliveries"), &[], b"");
        let form = http_request("GET", &link, &[], b"");
        let form_text = String::from_utf8_lossy(&form.body).into_owned();
        assert!(form_text.contains("value=\"ops-bob\""), "the operator suggested: {form_text}");
        let token = link.split("token=").nth(1).unwrap_or_default();
        let posted = format!("token={token}&operator=ops-bob");
        let typed = [("Content-Type".to_owned(), "application/x-www-form-urlencoded".to_owned())];
        let login =
            http_request("POST", &format!("{base}/console/login"), &typed, posted.as_bytes());
        let cookie = login
            .header("set-cookie")
            .unwrap_or_default()
            .split(';')
            .next()
            .unwrap_or_default()
            .to_owned();
        let headers = [("Cookie".to_owned(), cookie)];
        let listed =
            http_request("GET", &format!("{base}/console/deliveries?status=dead"), &headers, b"");
        (refused.status, login.status, listed)
    });
    let (refused, login, listed) = pages.await.unwrap_or_else(|e| panic!("{e}"));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(refused, 401, "a page without the link's session");
    assert_eq!(login, 303, "the link starts a session");
    let text = String::from_utf8_lossy(&listed.body);
    assert_eq!(listed.status, 200, "{text}");
    assert!(text.contains("d-1") && text.contains("mailer answered 503"), "{text}");
    assert!(text.contains("Sign out ops-bob"), "it acts as the operator given: {text}");
}
