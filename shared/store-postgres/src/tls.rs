//! Connection URLs and TLS through `rustls`.
//!
//! The URL's `sslmode` decides, as libpq's does, with one deliberate difference:
//!
//! | `sslmode` | what happens |
//! |---|---|
//! | absent, `disable`, `allow`, `prefer` | plain TCP (libpq would *try* TLS for `allow`/`prefer`; Jadpo does not pretend: ask for TLS with `require` or `verify-full`) |
//! | `require` | TLS; the server certificate is verified against `sslrootcert` when one is given (as libpq does), otherwise only encrypted |
//! | `verify-ca`, `verify-full` | TLS; the chain *and* the host name are verified, against `sslrootcert` (e.g. RDS's `global-bundle.pem`) or else the Mozilla roots |
//!
//! `sslrootcert=/path/to/bundle.pem` names a PEM file of CA certificates. Both parameters are
//! removed before the rest of the URL goes to `tokio-postgres`.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use jadpo_core::StoreError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What `sslmode` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS; verify only when a CA bundle is given.
    Require,
    /// TLS; verify the chain and the host name.
    VerifyFull,
}

impl SslMode {
    /// The mode's name as `sslmode` spells it (`allow`/`prefer` are `disable` here).
    pub fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Require => "require",
            Self::VerifyFull => "verify-full",
        }
    }

    fn parse(value: &str) -> Result<Self, StoreError> {
        match value {
            "disable" | "allow" | "prefer" => Ok(Self::Disable),
            "require" => Ok(Self::Require),
            "verify-ca" | "verify-full" => Ok(Self::VerifyFull),
            other => Err(StoreError::invalid(format!(
                "sslmode={other} is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ))),
        }
    }
}

/// A parsed database URL: the driver config and, when TLS is asked for, the connector.
pub(crate) struct Target {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) tls: Option<MakeRustlsConnect>,
}

/// Where a URL connects and how: what a deployed process checks before anything connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transport {
    /// The TLS mode the URL asks for.
    pub mode: SslMode,
    /// The hosts it names (a Unix socket's directory for a local socket), comma-separated.
    pub hosts: String,
    /// Whether every host (and every `hostaddr`) is this machine: a loopback address,
    /// `localhost` or a Unix socket.
    pub local: bool,
}

/// Reads where and how `url` connects, without connecting.
pub fn transport(url: &str) -> Result<Transport, StoreError> {
    let (rest, mode, _) = split_tls_params(url)?;
    let config = tokio_postgres::Config::from_str(&rest)
        .map_err(|e| StoreError::invalid(format!("the PostgreSQL URL is not valid: {e}")))?;
    let mut local = config.get_hostaddrs().iter().all(std::net::IpAddr::is_loopback);
    let mut hosts = Vec::new();
    for host in config.get_hosts() {
        match host {
            tokio_postgres::config::Host::Tcp(name) => {
                local &= loopback_name(name);
                hosts.push(name.clone());
            }
            tokio_postgres::config::Host::Unix(dir) => hosts.push(dir.display().to_string()),
        }
    }
    Ok(Transport { mode, hosts: hosts.join(","), local })
}

/// `localhost` or a loopback address (IPv6 in brackets or not).
fn loopback_name(name: &str) -> bool {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost")
        || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Splits the TLS parameters off `url` and builds the driver config and TLS connector.
pub(crate) fn parse_url(url: &str) -> Result<Target, StoreError> {
    let (rest, mode, root_cert) = split_tls_params(url)?;
    let mut config = tokio_postgres::Config::from_str(&rest)
        .map_err(|e| StoreError::invalid(format!("the PostgreSQL URL is not valid: {e}")))?;
    let tls = match mode {
        SslMode::Disable => {
            config.ssl_mode(tokio_postgres::config::SslMode::Disable);
            None
        }
        SslMode::Require | SslMode::VerifyFull => {
            config.ssl_mode(tokio_postgres::config::SslMode::Require);
            Some(MakeRustlsConnect::new(client_config(mode, root_cert.as_deref())?))
        }
    };
    Ok(Target { config, tls })
}

/// Returns the URL without `sslmode`/`sslrootcert`, the mode and the CA bundle path.
pub fn split_tls_params(url: &str) -> Result<(String, SslMode, Option<String>), StoreError> {
    let mut parsed = url::Url::parse(url)
        .map_err(|e| StoreError::invalid(format!("the PostgreSQL URL is not valid: {e}")))?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(StoreError::invalid(format!(
            "a PostgreSQL URL starts with postgres://, not {}://",
            parsed.scheme()
        )));
    }
    let mut mode = SslMode::Disable;
    let mut root_cert = None;
    let mut kept = Vec::new();
    for (key, value) in parsed.query_pairs() {
        match key.as_ref() {
            "sslmode" => mode = SslMode::parse(&value)?,
            "sslrootcert" => root_cert = Some(value.into_owned()),
            _ => kept.push((key.into_owned(), value.into_owned())),
        }
    }
    if kept.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(kept);
    }
    Ok((parsed.to_string(), mode, root_cert))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls client configuration for `mode`, with the CA bundle at `root_cert` if given.
pub fn client_config(mode: SslMode, root_cert: Option<&str>) -> Result<ClientConfig, StoreError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::internal(format!("rustls: {e}")))?;
    let config = match (mode, root_cert) {
        (SslMode::Require, None) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider())))
            .with_no_client_auth(),
        (_, Some(path)) => {
            builder.with_root_certificates(roots_from(Path::new(path))?).with_no_client_auth()
        }
        (_, None) => {
            let mut roots = RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    Ok(config)
}

fn roots_from(path: &Path) -> Result<RootCertStore, StoreError> {
    let shown = path.display();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| StoreError::invalid(format!("cannot read sslrootcert {shown}: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| StoreError::invalid(format!("sslrootcert {shown} is not PEM: {e}")))?;
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(StoreError::invalid(format!(
            "sslrootcert {shown} holds no usable certificate"
        )));
    }
    Ok(roots)
}

/// `sslmode=require` without a CA bundle: encrypt, check the handshake signatures, but do not
/// verify who the server is (libpq's documented behaviour for that mode).
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_are_split_off_the_url() {
        let (rest, mode, root) = split_tls_params(
            "postgres://u:p@db.example:5432/app?sslmode=verify-full&sslrootcert=/etc/rds.pem&application_name=x",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rest, "postgres://u:p@db.example:5432/app?application_name=x");
        assert_eq!(mode, SslMode::VerifyFull);
        assert_eq!(root.as_deref(), Some("/etc/rds.pem"));
        let (rest, mode, root) =
            split_tls_params("postgresql://h/db").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((rest.as_str(), mode, root), ("postgresql://h/db", SslMode::Disable, None));
    }

    #[test]
    fn transport_tells_this_machine_from_another() {
        let t = |url: &str| transport(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        for url in [
            "postgres://u@127.0.0.1:5432/db",
            "postgres://u@localhost/db",
            "postgres://u@[::1]:5432/db",
            "postgres://u@%2Fvar%2Frun%2Fpostgresql/db",
            "postgres://u@localhost/db?hostaddr=127.0.0.1",
        ] {
            assert!(t(url).local, "{url} is this machine");
        }
        for url in [
            "postgres://u@db.example.com/db",
            "postgres://u@10.0.0.5/db?sslmode=require",
            "postgres://u@localhost/db?hostaddr=10.0.0.5",
            "postgres://u@localhost/db?host=db.example.com",
            "postgres://u@localhost.example.com/db",
        ] {
            assert!(!t(url).local, "{url} is another machine");
        }
        let remote = t("postgres://u:p@db.example.com/db?sslmode=verify-ca");
        assert_eq!((remote.mode, remote.hosts.as_str()), (SslMode::VerifyFull, "db.example.com"));
        assert_eq!(t("postgres://u@h/db?sslmode=prefer").mode.name(), "disable");
        assert!(transport("postgres://h/db?sslmode=maybe").is_err());
    }

    #[test]
    fn bad_urls_and_modes_are_clear_errors() {
        let msg =
            |url: &str| split_tls_params(url).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg("postgres://h/db?sslmode=sometimes").contains("sslmode=sometimes is not one of")
        );
        assert!(msg("mysql://h/db").contains("starts with postgres://"));
        assert!(msg("not a url").contains("not valid"));
    }

    #[test]
    fn every_mode_builds_a_client_config() {
        assert!(client_config(SslMode::Require, None).is_ok());
        assert!(client_config(SslMode::VerifyFull, None).is_ok());
        assert!(parse_url("postgres://h/db?sslmode=require").is_ok_and(|t| t.tls.is_some()));
        assert!(parse_url("postgres://h/db").is_ok_and(|t| t.tls.is_none()));
    }

    #[test]
    fn a_missing_or_empty_ca_bundle_is_refused() {
        let err = client_config(SslMode::VerifyFull, Some("/nonexistent/ca.pem"));
        assert!(
            err.err()
                .map(|e| e.to_string())
                .unwrap_or_default()
                .contains("cannot read sslrootcert")
        );
        let dir = std::env::temp_dir().join(format!("jadpo-empty-{}.pem", std::process::id()));
        let _ = std::fs::write(&dir, "not a certificate\n");
        let err = client_config(SslMode::VerifyFull, dir.to_str());
        let _ = std::fs::remove_file(&dir);
        assert!(
            err.err().map(|e| e.to_string()).unwrap_or_default().contains("no usable certificate")
        );
    }
}
