//! Where a store's data lives, as configured: an SQLite file or `:memory:`, or a PostgreSQL URL —
//! shown only with its secrets hidden, and, for a deployed process or an operator, refused before
//! any connection when it would reach another machine's database without verified TLS.

use std::path::PathBuf;

use jadpo_store_postgres::tls::SslMode;

use super::ConfigError;

/// Where an SQLite store's data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlitePath {
    /// A file (created with its parent folders if missing).
    File(PathBuf),
    /// A private in-memory database, gone when the store is dropped.
    Memory,
}

/// Where a store's data lives. Its `Debug` is [`DatabaseUrl::display`]: a configuration logged
/// whole (`{config:?}`) shows no password.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// A PostgreSQL URL (kept whole; it may hold a password, so it is never printed).
    Postgres(String),
    /// An SQLite file or `:memory:`.
    Sqlite(SqlitePath),
}

impl DatabaseUrl {
    /// Parses `postgres://…`, `postgresql://…`, `sqlite://path` or `sqlite::memory:`.
    pub fn parse(variable: &str, url: &str) -> Result<Self, ConfigError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        match url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
            Some(":memory:") => Ok(Self::Sqlite(SqlitePath::Memory)),
            Some(path) if !path.is_empty() => {
                Ok(Self::Sqlite(SqlitePath::File(PathBuf::from(path))))
            }
            _ => Err(ConfigError::BadUrl { variable: variable.to_owned(), shown: redact(url) }),
        }
    }

    /// A form safe to print: the PostgreSQL password is hidden.
    pub fn display(&self) -> String {
        match self {
            Self::Postgres(url) => redact(url),
            Self::Sqlite(SqlitePath::Memory) => "sqlite://:memory:".to_owned(),
            Self::Sqlite(SqlitePath::File(path)) => format!("sqlite://{}", path.display()),
        }
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display())
    }
}

/// Hides the secrets of a URL: the userinfo password (`postgres://user:***@host/db`) and any
/// query parameter that carries one (`?password=***`, `sslpassword`, and any key naming a secret
/// or token), which libpq accepts as well as the userinfo form.
pub fn redact(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else { return "<unparsable URL>".to_owned() };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    let secret = |key: &str| {
        let key = key.to_ascii_lowercase();
        ["password", "secret", "token"].iter().any(|word| key.contains(word))
    };
    if parsed.query_pairs().any(|(key, _)| secret(&key)) {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let shown = if secret(&k) { "***".to_owned() } else { v.into_owned() };
                (k.into_owned(), shown)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

/// Deployed and operator processes reach a database on another machine only over TLS that
/// verifies the server (`verify-full`/`verify-ca`): a URL without `sslmode`, or with `require`,
/// would hand its password and data to whoever answers at that address. Refused before any
/// connection is attempted, unless `JADPO_INSECURE_DATABASE_TLS=1` says otherwise.
pub(super) fn check_database_tls(
    env: &dyn Fn(&str) -> Option<String>,
    variable: &str,
    url: &DatabaseUrl,
) -> Result<(), ConfigError> {
    let DatabaseUrl::Postgres(text) = url else { return Ok(()) };
    let transport =
        jadpo_store_postgres::tls::transport(text).map_err(|e| ConfigError::BadDatabaseUrl {
            variable: variable.to_owned(),
            reason: e.message().to_owned(),
        })?;
    let overridden = env(INSECURE_DATABASE_TLS).is_some_and(|v| v.trim() == "1");
    let how = match transport.mode {
        _ if transport.local || overridden => return Ok(()),
        SslMode::VerifyFull => return Ok(()),
        SslMode::Require => "over TLS without verifying the server (sslmode=require)",
        SslMode::Disable => "without TLS (no sslmode, or disable, allow or prefer)",
    };
    Err(ConfigError::UnverifiedDatabase {
        variable: variable.to_owned(),
        hosts: transport.hosts,
        how,
    })
}

/// The loudly named override of [`check_database_tls`].
pub const INSECURE_DATABASE_TLS: &str = "JADPO_INSECURE_DATABASE_TLS";
