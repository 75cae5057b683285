//! The statement contract on this dialect: every statement's text uses exactly the parameters
//! its slot declares, `$1` … `$N`, so no binding can shift a value into the wrong column; and a
//! statement whose text or binding gets a parameter wrong does not compile (checked by building
//! a scratch crate that gets it wrong in each way, beside one that gets it right).

use jadpo_store_sqlite::DIALECT;

#[test]
fn every_statement_uses_exactly_the_parameters_its_slot_declares() {
    match jadpo_store_sql::check_dialect(&DIALECT) {
        // Every role's table is read: a slot list that lost a table would pass vacuously.
        Ok(slots) => assert!(slots >= 100, "only {slots} slots read"),
        Err(wrong) => {
            panic!("statements that break their slot's declaration:\n{}", wrong.join("\n"))
        }
    }
}

/// A crate that gets the statement contract wrong in each way a user could, each on its own
/// line: every one must fail the build, with the message naming what is wrong.
const MISUSES: &str = r#"
use chrono::{DateTime, Utc};
use jadpo_store_sql::tables::breaker;
use jadpo_store_sql::{Statement, sql};

pub static MISSPELT: Statement<breaker::Release> =
    sql!(breaker::Release, "UPDATE b SET at = $now WHERE connection = $conection");
pub static UNUSED: Statement<breaker::Release> =
    sql!(breaker::Release, "UPDATE b SET at = now() WHERE connection = $connection");
pub static POSITIONAL: Statement<breaker::Release> =
    sql!(breaker::Release, "UPDATE b SET at = $2 WHERE connection = $1");
pub static WRONG_SLOT: Statement<breaker::Release> =
    sql!(breaker::Unhold, "DELETE FROM h WHERE id = $id");

pub fn swapped(connection: String, now: DateTime<Utc>) -> breaker::Release {
    breaker::Release { connection: now, now: connection }
}

pub fn missing(connection: String) -> breaker::Release {
    breaker::Release { connection }
}
"#;

/// The same crate written right: it must build, so the failures above are the misuses'.
const RIGHT: &str = r#"
use chrono::{DateTime, Utc};
use jadpo_store_sql::tables::breaker;
use jadpo_store_sql::{Statement, sql};

pub static RELEASE: Statement<breaker::Release> =
    sql!(breaker::Release, "UPDATE b SET at = $now WHERE connection = $connection");

pub fn bound(connection: String, now: DateTime<Utc>) -> breaker::Release {
    breaker::Release { now, connection }
}
"#;

/// `cargo check` of a scratch crate holding `source`, against this workspace's store-sql: its
/// success and its diagnostics.
fn check_crate(name: &str, source: &str) -> (bool, String) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap_or_else(|e| panic!("workspace root: {e}"));
    let dir = root.join("target/statement-contract").join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap_or_else(|e| panic!("{dir:?}: {e}"));
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\njadpo-store-sql = {{ path = {sql:?} }}\n\
         chrono = {{ version = \"0.4\", default-features = false, features = [\"std\"] }}\n\n\
         [workspace]\n",
        sql = root.join("shared/store-sql").display().to_string(),
    );
    let write = |path: std::path::PathBuf, text: &str| {
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    };
    write(dir.join("Cargo.toml"), &manifest);
    write(dir.join("src/lib.rs"), source);
    // The workspace's lock file pins the same versions, so nothing is fetched.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
        .unwrap_or_else(|e| panic!("Cargo.lock: {e}"));
    let out = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["check", "--offline", "--quiet", "--message-format", "short"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", root.join("target/statement-contract/target"))
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap_or_else(|e| panic!("cargo check could not run: {e}"));
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_misspelt_unused_positional_or_swapped_parameter_fails_to_compile() {
    let (built, said) = check_crate("statement-contract-right", RIGHT);
    assert!(built, "the statement written right must build:\n{said}");
    let (built, said) = check_crate("statement-contract-misuses", MISUSES);
    assert!(!built, "every misuse built:\n{said}");
    for (line, why) in [
        (7, "names a parameter its slot does not declare"),
        (9, "leaves a parameter its slot declares unused"),
        (11, "positional placeholder"),
        (13, "mismatched types"),
        (16, "mismatched types"),
        (20, "missing field `now`"),
    ] {
        let at = format!("src/lib.rs:{line}:");
        assert!(
            said.lines().any(|l| l.contains(&at) && l.contains(why)),
            "line {line} should fail with {why:?}:\n{said}"
        );
    }
}
