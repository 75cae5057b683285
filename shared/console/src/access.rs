//! Who may use the console, and how each request proves it.
//!
//! Why a login link and a session cookie: the console changes deliveries with its operator's
//! database rights, so reaching its port must not be enough. `jadpo console` makes a random
//! login token at start and prints a link holding it (kept here only as its SHA-256). The link
//! works once: opening it shows a form asking who is signing in (the name every change of the
//! session is recorded under), and posting that form spends the link and starts a session: an
//! `HttpOnly`, `SameSite=Strict` cookie whose id is also kept only as a verifier, with a CSRF
//! token every form carries back. A signed-in operator can make a link for another browser; such
//! a link also works once, and only for [`MINTED_LINK_TTL`]. A console started with `--no-login`
//! asks for nothing, and so may listen only on a loopback address ([`listen_allowed`]); one with
//! a login serves plain HTTP, so it listens on another address only when asked explicitly.
//!
//! Every request must also name a host the console answers to (the listen address, `localhost`,
//! or one given): a page of another site that points a name of its own at 127.0.0.1 (DNS
//! rebinding) is refused before it reads anything.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};
use data_encoding::HEXLOWER;
use jadpo_engine::operate::Operator;
use sha2::{Digest, Sha256};

/// How long a session lasts from its login.
const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// How long a login link made in the console (for another browser) works, if unused.
pub const MINTED_LINK_TTL: Duration = Duration::from_secs(15 * 60);
/// The longest operator name a login takes.
const NAME_MAX: usize = 64;
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
    /// Plain HTTP on an address others can reach, not asked for.
    #[error(
        "the console speaks plain HTTP, so on {0} its login link and session cookie would cross \
         the network in clear: listen on a loopback address and reach it through an SSH tunnel \
         or a TLS-terminating proxy, or pass --plain-http-on-network if that proxy is in front"
    )]
    PlainHttpOnTheNetwork(SocketAddr),
    /// No randomness for a token.
    #[error("no randomness available for a token: {0}")]
    Random(String),
}

/// Why a login was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LoginRefusal {
    /// A token that is not a live link of this console (wrong, used, expired).
    #[error("that login link is not this console's, was used already, or has expired")]
    NoSuchLink,
    /// A name that cannot be recorded.
    #[error(
        "give your name (1 to {NAME_MAX} printable characters): every change you make is recorded under it"
    )]
    BadName,
}

/// Whether a console may listen on `addr` with `login` (or without), and plain HTTP on a
/// non-loopback address when `plain_http_on_network`.
pub fn listen_allowed(
    addr: SocketAddr,
    login: bool,
    plain_http_on_network: bool,
) -> Result<(), AccessError> {
    match (addr.ip().is_loopback(), login, plain_http_on_network) {
        (true, _, _) => Ok(()),
        (false, false, _) => Err(AccessError::OpenToTheNetwork(addr)),
        (false, true, false) => Err(AccessError::PlainHttpOnTheNetwork(addr)),
        (false, true, true) => Ok(()),
    }
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

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Session {
    csrf: String,
    operator: Arc<Operator>,
    started: Instant,
}

/// A signed-in request: the CSRF token its forms carry and the operator it acts as.
#[derive(Debug, Clone)]
pub(crate) struct Signed {
    pub(crate) csrf: String,
    pub(crate) operator: Arc<Operator>,
}

/// The console's gate: its live login links' verifiers (none with `--no-login`), its
/// sessions, the operator a session is named after by default, and the hosts it answers to.
pub(crate) struct Access {
    asks_login: bool,
    /// Each unused link's verifier and, for a minted one, when it stops working.
    links: Mutex<HashMap<String, Option<Instant>>>,
    open: Signed,
    sessions: Mutex<HashMap<String, Session>>,
    hosts: Vec<String>,
}

impl Access {
    /// A gate for a console at `listen` acting by default as `operator`, with a login token
    /// (returned) unless `open`; it also answers to `hosts` (`name` or `name:port`).
    pub(crate) fn new(
        listen: SocketAddr,
        (open, plain_http_on_network): (bool, bool),
        operator: Operator,
        hosts: &[String],
    ) -> Result<(Self, Option<String>), AccessError> {
        listen_allowed(listen, !open, plain_http_on_network)?;
        let token = if open { None } else { Some(random_token()?) };
        let port = listen.port();
        let mut answered = vec![
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
            listen.to_string(),
        ];
        answered.extend(hosts.iter().cloned());
        let links = token.iter().map(|t| (verifier(t), None)).collect();
        let access = Self {
            asks_login: !open,
            links: Mutex::new(links),
            open: Signed { csrf: random_token()?, operator: Arc::new(operator) },
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

    /// The operator a login form suggests.
    pub(crate) fn default_operator(&self) -> &Operator {
        &self.open.operator
    }

    /// Whether `token` is a live link (asked before the login form is shown; spends nothing).
    pub(crate) fn link_live(&self, token: &str) -> bool {
        let mut links = locked(&self.links);
        links.retain(|_, until| until.is_none_or(|t| Instant::now() < t));
        links.contains_key(&verifier(token))
    }

    /// A new link for another browser, working once within [`MINTED_LINK_TTL`]: its token.
    pub(crate) fn mint_link(&self) -> Result<String, AccessError> {
        let token = random_token()?;
        locked(&self.links).insert(verifier(&token), Some(Instant::now() + MINTED_LINK_TTL));
        Ok(token)
    }

    /// Spends the link `token` and starts a session acting as `name`: the cookie's value.
    pub(crate) fn login(&self, token: &str, name: &str) -> Result<String, LoginRefusal> {
        let name = name.trim();
        let printable = !name.is_empty()
            && name.chars().count() <= NAME_MAX
            && name.chars().all(|c| !c.is_control());
        let operator = Operator::new(name).ok().filter(|_| printable);
        if !self.asks_login || !self.link_live(token) {
            return Err(LoginRefusal::NoSuchLink);
        }
        let mut operator = operator.ok_or(LoginRefusal::BadName)?;
        if let Some(account) = self.open.operator.account() {
            operator = operator.from_account(account);
        }
        let fresh = (random_token(), random_token());
        let (Ok(id), Ok(csrf)) = fresh else { return Err(LoginRefusal::NoSuchLink) };
        if locked(&self.links).remove(&verifier(token)).is_none() {
            return Err(LoginRefusal::NoSuchLink);
        }
        let mut sessions = locked(&self.sessions);
        sessions.retain(|_, s| s.started.elapsed() < SESSION_TTL);
        let session = Session { csrf, operator: Arc::new(operator), started: Instant::now() };
        sessions.insert(verifier(&id), session);
        Ok(id)
    }

    /// Ends the request's session.
    pub(crate) fn logout(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers) {
            locked(&self.sessions).remove(&verifier(&id));
        }
    }

    /// The request's session, if it carries a live one (or every request, with `--no-login`).
    pub(crate) fn signed(&self, headers: &HeaderMap) -> Option<Signed> {
        if !self.asks_login {
            return Some(self.open.clone());
        }
        let id = cookie(headers)?;
        let sessions = locked(&self.sessions);
        let session = sessions.get(&verifier(&id))?;
        (session.started.elapsed() < SESSION_TTL)
            .then(|| Signed { csrf: session.csrf.clone(), operator: Arc::clone(&session.operator) })
    }

    /// Whether the console asks for a login.
    pub(crate) fn asks_login(&self) -> bool {
        self.asks_login
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

    fn gate(listen: &str, open: bool, hosts: &[String]) -> (Access, Option<String>) {
        let operator = Operator::new("ops-default").unwrap_or_else(|e| panic!("{e}"));
        let made = Access::new(addr(listen), (open, false), operator, hosts);
        made.unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn off_loopback_a_console_needs_a_login_and_an_explicit_plain_http_flag() {
        assert!(listen_allowed(addr("127.0.0.1:7070"), false, false).is_ok());
        assert!(listen_allowed(addr("[::1]:7070"), false, false).is_ok());
        let public = listen_allowed(addr("0.0.0.0:7070"), false, true);
        assert!(matches!(public, Err(AccessError::OpenToTheNetwork(_))), "{public:?}");
        let plain = listen_allowed(addr("0.0.0.0:7070"), true, false);
        assert!(matches!(plain, Err(AccessError::PlainHttpOnTheNetwork(_))), "{plain:?}");
        assert!(plain.is_err_and(|e| e.to_string().contains("--plain-http-on-network")));
        assert!(listen_allowed(addr("0.0.0.0:7070"), true, true).is_ok(), "asked explicitly");
        let operator = Operator::new("ops").unwrap_or_else(|e| panic!("{e}"));
        assert!(Access::new(addr("10.0.0.5:7070"), (true, true), operator, &[]).is_err());
    }

    #[test]
    fn the_printed_link_works_once_and_names_the_session_s_operator() {
        let (access, token) = gate("127.0.0.1:7070", false, &[]);
        let token = token.unwrap_or_else(|| panic!("a login token"));
        assert!(access.signed(&headers(&[])).is_none(), "no cookie, no session");
        assert_eq!(access.login("wrong", "alice"), Err(LoginRefusal::NoSuchLink));
        for bad in ["", "   ", "a\u{7}b", &"x".repeat(NAME_MAX + 1)] {
            assert_eq!(access.login(&token, bad), Err(LoginRefusal::BadName), "{bad:?}");
        }
        assert!(access.link_live(&token), "a refused name spends nothing");
        let id = access.login(&token, " alice ").unwrap_or_else(|e| panic!("{e}"));
        assert!(!access.link_live(&token), "spent");
        assert_eq!(access.login(&token, "mallory"), Err(LoginRefusal::NoSuchLink), "once");
        let with = headers(&[("cookie", &format!("a=b; {COOKIE}={id}"))]);
        let signed = access.signed(&with).unwrap_or_else(|| panic!("signed in"));
        assert_eq!((signed.csrf.len(), signed.operator.name()), (64, "alice"));
        let forged = headers(&[("cookie", &format!("{COOKIE}={}", verifier(&id)))]);
        assert!(access.signed(&forged).is_none(), "the stored verifier is not a cookie");
        let minted = access.mint_link().unwrap_or_else(|e| panic!("{e}"));
        let bob = access.login(&minted, "bob").unwrap_or_else(|e| panic!("{e}"));
        let bobs = headers(&[("cookie", &format!("{COOKIE}={bob}"))]);
        let signed = access.signed(&bobs).unwrap_or_else(|| panic!("bob signed in"));
        assert_eq!(signed.operator.name(), "bob", "each session its own operator");
        access.logout(&with);
        assert!(access.signed(&with).is_none(), "signed out");
        assert!(access.signed(&bobs).is_some(), "another browser's session stays");
    }

    #[test]
    fn only_its_own_hosts_are_answered() {
        let hosts = ["ops.internal".to_owned()];
        let (access, _) = gate("127.0.0.1:7070", false, &hosts);
        for ok in ["127.0.0.1:7070", "localhost:7070", "[::1]:7070", "ops.internal:9000"] {
            assert!(access.host_ok(&headers(&[("host", ok)])), "{ok}");
        }
        for bad in ["evil.example:7070", "localhost:7071", ""] {
            assert!(!access.host_ok(&headers(&[("host", bad)])), "{bad}");
        }
    }
}
