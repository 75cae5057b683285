//! A throwaway PostgreSQL cluster that speaks TLS, with a certificate authority made for it, so
//! the adapter's `sslmode` handling is tested against a real server.

use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use crate::cluster::{Cluster, start_cluster};

/// A TLS-only cluster (plain connections are refused) and the CA files to verify it with.
pub struct PgTlsServer {
    cluster: Cluster,
}

impl PgTlsServer {
    /// Starts the cluster: a new CA signs a server certificate for `127.0.0.1` and `localhost`,
    /// and a second, unrelated CA is written beside it for negative tests. Panics when the local
    /// PostgreSQL binaries are missing (this test needs its own server configuration).
    pub fn start() -> Self {
        match start_cluster(configure_tls) {
            Ok(cluster) => Self { cluster },
            Err(why) => panic!(
                "the TLS tests start their own PostgreSQL cluster and need the server binaries \
                 (initdb, pg_ctl; Debian: apt-get install postgresql): {why}"
            ),
        }
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres` with `query` appended.
    pub fn url(&self, query: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres?{query}", self.cluster.port)
    }

    /// The PEM file of the CA that signed the server's certificate.
    pub fn ca_path(&self) -> PathBuf {
        self.cluster.dir.join("ca.pem")
    }

    /// The PEM file of a CA that did not sign it.
    pub fn other_ca_path(&self) -> PathBuf {
        self.cluster.dir.join("other-ca.pem")
    }
}

fn certificate_authority(name: &str) -> Result<(String, Issuer<'static, KeyPair>), rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), Issuer::new(params, key)))
}

fn configure_tls(dir: &Path) -> Result<String, String> {
    let fail = |e: rcgen::Error| format!("cannot make test certificates: {e}");
    let (ca_pem, issuer) = certificate_authority("jadpo test CA").map_err(fail)?;
    let (other_pem, _) = certificate_authority("unrelated CA").map_err(fail)?;
    let key = KeyPair::generate().map_err(fail)?;
    let params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .map_err(fail)?;
    let cert = params.signed_by(&key, &issuer).map_err(fail)?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).map_err(|e| format!("cannot write {name}: {e}"))
    };
    write("ca.pem", &ca_pem)?;
    write("other-ca.pem", &other_pem)?;
    write("server.crt", &cert.pem())?;
    write("server.key", &key.serialize_pem())?;
    let chmod = Command::new("chmod").arg("600").arg(dir.join("server.key")).status();
    if !chmod.is_ok_and(|s| s.success()) {
        return Err("cannot chmod server.key".to_owned());
    }
    // Only TLS connections from 127.0.0.1 are accepted: a plain one fails the test.
    let hba = "hostssl all all 127.0.0.1/32 trust\nlocal all all trust\n";
    write("data/pg_hba.conf", hba)?;
    Ok(format!(
        "-c ssl=on -c ssl_cert_file={0}/server.crt -c ssl_key_file={0}/server.key",
        dir.display()
    ))
}
