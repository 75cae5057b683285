//! Tracing: `RUST_LOG` filters; JSON lines on Lambda (CloudWatch parses them) or with
//! `JADPO_LOG_FORMAT=json`, text elsewhere — coloured only when standard error is a terminal, so
//! a log written to a file or a pipe holds no escape codes.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// `JADPO_LOG_FORMAT` names no format.
#[derive(Debug, thiserror::Error)]
#[error("JADPO_LOG_FORMAT={0:?} is not a log format: use text or json (or leave it unset)")]
pub struct UnknownLogFormat(pub String);

/// Whether logs are JSON lines, from `JADPO_LOG_FORMAT` (unset or empty: text) and whether this
/// runs on Lambda (always JSON).
fn json_lines(format: Option<&str>, on_lambda: bool) -> Result<bool, UnknownLogFormat> {
    match format.map(str::trim).filter(|f| !f.is_empty()) {
        None => Ok(on_lambda),
        Some(f) if f.eq_ignore_ascii_case("json") => Ok(true),
        Some(f) if f.eq_ignore_ascii_case("text") => Ok(on_lambda),
        Some(other) => Err(UnknownLogFormat(other.to_owned())),
    }
}

/// Installs the global subscriber once (later calls do nothing). With an unknown
/// `JADPO_LOG_FORMAT` it installs the environment's default and refuses the value, so the caller
/// stops with the reason logged.
pub fn init_tracing() -> Result<(), UnknownLogFormat> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let on_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let format = std::env::var("JADPO_LOG_FORMAT").ok();
    let json = json_lines(format.as_deref(), on_lambda);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = if *json.as_ref().unwrap_or(&on_lambda) {
        builder.json().without_time().try_init()
    } else {
        builder.try_init()
    };
    json.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::json_lines;

    #[test]
    fn the_log_format_is_text_or_json_and_nothing_else() {
        assert!(matches!(json_lines(None, false), Ok(false)));
        assert!(matches!(json_lines(Some(""), false), Ok(false)));
        assert!(matches!(json_lines(Some("JSON"), false), Ok(true)));
        assert!(matches!(json_lines(Some("text"), true), Ok(true)), "Lambda logs JSON");
        assert!(matches!(json_lines(None, true), Ok(true)));
        let refused = json_lines(Some("jsno"), false).map_err(|e| e.to_string());
        assert!(refused.is_err_and(|e| e.contains("\"jsno\"")));
    }
}
