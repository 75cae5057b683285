//! Who may use the console, and how each request proves it.
//!
//! Why a login link and a session cookie: the console changes deliveries with its operator's
//! database rights, so reaching its port must not be enough. `jadpo console` makes a random
//! login token at start and prints a link holding it (kept here only as its SHA-256); opening
//! the link starts a session: an `HttpOnly`, `SameSite=Strict` cookie whose id is also kept only
//! as a verifier, with a CSRF token every form carries back. A console started with `--no-login`
//! asks for nothing, and so may listen only on a loopback address ([`listen_allowed`]).
//!
//! Every request must also name a host the console answers to (the listen address, `localhost`,
//! or one given): a page of another site that points a name of its own at 127.0.0.1 (DNS
//! rebinding) is refused before it reads anything.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};
use data_encoding::HEXLOWER;
use sha2::{Digest, Sha256};

/// How long a session lasts from its login.
const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// The session cookie's name.
pub(crate) const COOKIE: &str = "jadpo_console";

/// Why the console cannot start as asked.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// `--no-login` on an address others can reach.
    #[error(
        "the console serves anyone who reaches {0} without a login: listen on a loopback address \
         (127.0.0.1 or ::1), or drop --no-login so every request needs the login link"
    )]
    OpenToTheNetwork(SocketAddr),
    /// No randomness for a token.
    #[error("no randomness available for a token: {0}")]
    Random(String),
}

/// Whether a console may listen on `addr` with `login` (or without).
pub fn listen_allowed(addr: SocketAddr, login: bool) -> Result<(), AccessError> {
    if login || addr.ip().is_loopback() { Ok(()) } else { Err(AccessError::OpenToTheNetwork(addr)) }
}

/// 32 random bytes, hex.
pub(crate) fn random_token() -> Result<String, AccessError> {
    let mut bytes = [0_u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| AccessError::Random(e.to_string()))?;
    Ok(HEXLOWER.encode(&bytes))
}

fn verifier(secret: &str) -> String {
    HEXLOWER.encode(&Sha256::digest(secret.as_bytes()))
}

struct Session {
    csrf: String,
    started: Instant,
}

/// A signed-in request: the CSRF token its forms carry.
#[derive(Debug, Clone)]
pub(crate) struct Signed {
    pub(crate) csrf: String,
}

/// The console's gate: its login token's verifier (none with `--no-login`), its sessions, and
/// the hosts it answers to.
pub(crate) struct Access {
    login: Option<String>,
    open_csrf: String,
    sessions: Mutex<HashMap<String, Session>>,
    hosts: Vec<String>,
}

impl Access {
    /// A gate for a console at `listen`, with a login token (returned) unless `open`; it also
    /// answers to `hosts` (`name` or `name:port`).
    pub(crate) fn new(
        listen: SocketAddr,
        open: bool,
        hosts: &[String],
    ) -> Result<(Self, Option<String>), AccessError> {
        listen_allowed(listen, !open)?;
        let token = if open { None } else { Some(random_token()?) };
        let port = listen.port();
        let mut answered = vec![
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
            listen.to_string(),
        ];
        answered.extend(hosts.iter().cloned());
        let access = Self {
            login: token.as_deref().map(verifier),
            open_csrf: random_token()?,
            sessions: Mutex::new(HashMap::new()),
            hosts: answered,
        };
        Ok((access, token))
    }

    /// Whether the request names a host this console answers to.
    pub(crate) fn host_ok(&self, headers: &HeaderMap) -> bool {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
        let bare = |h: &str| h.rsplit_once(':').map_or(h.to_owned(), |(name, _)| name.to_owned());
        self.hosts.iter().any(|h| h == host || (!h.contains(':') && *h == bare(host)))
    }

    /// Starts a session for a login `token`; the cookie's value, or `None` for a wrong token.
    pub(crate) fn login(&self, token: &str) -> Result<Option<String>, AccessError> {
        let Some(expected) = &self.login else {
            return Ok(None);
        };
        if verifier(token) != *expected {
            return Ok(None);
        }
        let (id, csrf) = (random_token()?, random_token()?);
        let mut sessions = self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        sessions.retain(|_, s| s.started.elapsed() < SESSION_TTL);
        sessions.insert(verifier(&id), Session { csrf, started: Instant::now() });
        Ok(Some(id))
    }

    /// Ends the request's session.
    pub(crate) fn logout(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers) {
            let mut sessions =
                self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            sessions.remove(&verifier(&id));
        }
    }

    /// The request's session, if it carries a live one (or every request, with `--no-login`).
    pub(crate) fn signed(&self, headers: &HeaderMap) -> Option<Signed> {
        if self.login.is_none() {
            return Some(Signed { csrf: self.open_csrf.clone() });
        }
        let id = cookie(headers)?;
        let sessions = self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let session = sessions.get(&verifier(&id))?;
        (session.started.elapsed() < SESSION_TTL).then(|| Signed { csrf: session.csrf.clone() })
    }

    /// Whether the console asks for a login.
    pub(crate) fn asks_login(&self) -> bool {
        self.login.is_some()
    }
}

/// The session cookie's value.
fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
}

/// The `Set-Cookie` for session `id`.
pub(crate) fn session_cookie(id: &str) -> String {
    format!(
        "{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}",
        SESSION_TTL.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap_or_else(|e| panic!("{e}")));
        }
        map
    }

    #[test]
    fn an_open_console_listens_only_on_loopback() {
        assert!(listen_allowed(addr("127.0.0.1:7070"), false).is_ok());
        assert!(listen_allowed(addr("[::1]:7070"), false).is_ok());
        let public = listen_allowed(addr("0.0.0.0:7070"), false);
        assert!(matches!(public, Err(AccessError::OpenToTheNetwork(_))), "{public:?}");
        assert!(listen_allowed(addr("0.0.0.0:7070"), true).is_ok(), "with a login, anywhere");
        assert!(Access::new(addr("10.0.0.5:7070"), true, &[]).is_err());
    }

    #[test]
    fn only_the_printed_token_starts_a_session_and_only_its_cookie_uses_it() {
        let (access, token) =
            Access::new(addr("127.0.0.1:7070"), false, &[]).unwrap_or_else(|e| panic!("{e}"));
        let token = token.unwrap_or_else(|| panic!("a login token"));
        assert!(access.signed(&headers(&[])).is_none(), "no cookie, no session");
        assert_eq!(access.login("wrong").ok().flatten(), None);
        let id = access.login(&token).ok().flatten().unwrap_or_else(|| panic!("logged in"));
        let with = headers(&[("cookie", &format!("a=b; {COOKIE}={id}"))]);
        let signed = access.signed(&with).unwrap_or_else(|| panic!("signed in"));
        assert_eq!(signed.csrf.len(), 64);
        let forged = headers(&[("cookie", &format!("{COOKIE}={}", verifier(&id)))]);
        assert!(access.signed(&forged).is_none(), "the stored verifier is not a cookie");
        access.logout(&with);
        assert!(access.signed(&with).is_none(), "signed out");
    }

    #[test]
    fn only_its_own_hosts_are_answered() {
        let hosts = ["ops.internal".to_owned()];
        let (access, _) =
            Access::new(addr("127.0.0.1:7070"), false, &hosts).unwrap_or_else(|e| panic!("{e}"));
        for ok in ["127.0.0.1:7070", "localhost:7070", "[::1]:7070", "ops.internal:9000"] {
            assert!(access.host_ok(&headers(&[("host", ok)])), "{ok}");
        }
        for bad in ["evil.example:7070", "localhost:7071", ""] {
            assert!(!access.host_ok(&headers(&[("host", bad)])), "{bad}");
        }
    }
}
