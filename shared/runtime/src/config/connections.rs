//! Where each declared connection is reached and the header sent with every call to it
//! (`JADPO_CONNECTION_<NAME>_URL`, `JADPO_CONNECTION_<NAME>_HEADER`): checked at start, a header's
//! value (a secret) never shown in an error, a deployed connection `https://` unless a test bed
//! says otherwise.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use jadpo_application::Application;

use super::{ConfigError, redact};

/// `JADPO_CONNECTION_<NAME>_HEADER` of each declared connection that has one: `Name: value`.
pub(super) fn connection_headers(
    app: &Application,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, (String, String)>, ConfigError> {
    let mut out = BTreeMap::new();
    for name in app.connections() {
        let variable = format!("JADPO_CONNECTION_{}_HEADER", name.to_uppercase().replace('.', "_"));
        let Some(text) = env(&variable).filter(|t| !t.trim().is_empty()) else { continue };
        let bad = || ConfigError::BadConnectionHeader { variable: variable.clone() };
        let (header, value) = text.split_once(':').ok_or_else(bad)?;
        let (header, value) = (header.trim(), value.trim());
        let valid_name = !header.is_empty()
            && header.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        let valid_value =
            !value.is_empty() && value.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
        if !(valid_name && valid_value) {
            return Err(bad());
        }
        out.insert(name.clone(), (header.to_owned(), value.to_owned()));
    }
    Ok(out)
}

/// `JADPO_CONNECTION_<NAME>_URL` for each declared connection; locally, when unset, the local
/// process's own sink (`http://<listen>/sink/<name>`).
pub(super) fn connection_urls(
    app: &Application,
    env: &dyn Fn(&str) -> Option<String>,
    local: Option<SocketAddr>,
) -> Result<BTreeMap<String, url::Url>, ConfigError> {
    let mut out = BTreeMap::new();
    // Deployed, a connection is https:// unless a test bed says otherwise, loudly.
    let insecure = env("JADPO_INSECURE_HTTP_CONNECTIONS").is_some_and(|v| v.trim() == "1");
    for name in app.connections() {
        let variable = format!("JADPO_CONNECTION_{}_URL", name.to_uppercase().replace('.', "_"));
        let text = match (env(&variable), local) {
            (Some(url), _) => url,
            (None, Some(listen)) => format!("http://{listen}/sink/{name}"),
            (None, None) => {
                return Err(ConfigError::MissingConnectionUrl {
                    connection: name.clone(),
                    variable,
                });
            }
        };
        let url = url::Url::parse(&text)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| ConfigError::BadConnectionUrl {
                variable: variable.clone(),
                shown: redact(&text),
            })?;
        if local.is_none() && url.scheme() != "https" && !insecure {
            return Err(ConfigError::PlaintextConnection { variable });
        }
        out.insert(name.clone(), url);
    }
    Ok(out)
}
