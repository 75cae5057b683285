//! `sslmode` against a real TLS-only server with its own certificate authority.

use std::time::Duration;

use jadpo_core::{StoreErrorKind, TransactionalStore};
use jadpo_store_postgres::{PgOptions, PgStore, Postgres};
use jadpo_test_harness::PgTlsServer;

fn store(url: &str) -> PgStore {
    let options = PgOptions { connect_timeout: Duration::from_secs(3), ..PgOptions::default() };
    Postgres::connect("main", url, &options).unwrap_or_else(|e| panic!("{e}"))
}

async fn uses_tls(store: &PgStore) -> bool {
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("TLS connection failed: {e}"));
    let row = tx
        .query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    row.get_bool("ssl").unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn sslmode_is_honoured_against_a_tls_server() {
    let server = PgTlsServer::start();
    let ca = server.ca_path();
    let other = server.other_ca_path();

    let verified = store(&server.url(&format!("sslmode=verify-full&sslrootcert={}", ca.display())));
    assert!(uses_tls(&verified).await, "verify-full with the right CA must connect over TLS");

    let encrypted = store(&server.url("sslmode=require"));
    assert!(uses_tls(&encrypted).await, "require without a CA must still encrypt");

    let require_checked =
        store(&server.url(&format!("sslmode=require&sslrootcert={}", other.display())));
    let err = require_checked
        .ping()
        .await
        .err()
        .unwrap_or_else(|| panic!("require with the wrong CA connected"));
    assert_eq!(err.kind(), StoreErrorKind::Unavailable, "{err}");

    let wrong_ca =
        store(&server.url(&format!("sslmode=verify-full&sslrootcert={}", other.display())));
    let err =
        wrong_ca.ping().await.err().unwrap_or_else(|| panic!("verify-full trusted an unknown CA"));
    assert!(format!("{err:?}").to_lowercase().contains("certificate"), "{err:?}");

    let public_roots = store(&server.url("sslmode=verify-full"));
    assert!(public_roots.ping().await.is_err(), "a private CA must not pass the public roots");

    let plain = store(&server.url("sslmode=disable"));
    assert!(plain.ping().await.is_err(), "the server only accepts TLS; plain must be refused");
}
