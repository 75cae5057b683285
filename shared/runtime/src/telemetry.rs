//! Tracing: `RUST_LOG` filters; JSON lines on Lambda (CloudWatch parses them), text elsewhere.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber once; later calls do nothing.
pub fn init_tracing() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let on_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = if on_lambda || std::env::var("JADPO_LOG_FORMAT").is_ok_and(|f| f == "json") {
        builder.json().without_time().try_init()
    } else {
        builder.try_init()
    };
}
