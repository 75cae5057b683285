//! Webhook sources: a provider's events received at `POST /webhooks/{name}`, verified by the
//! source's scheme before any database work, and fed to one declared action, whose writes and
//! events commit with the event's receipt (`jadpo_webhook_receipts`, in that action's store).
//! The source's secrets are configuration, not declaration: the runtime reads them from the
//! variable the source names.

use std::time::Duration;

/// How a source signs its requests (`jadpo_engine::services::webhooks::verify` checks each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookScheme {
    /// `Stripe-Signature: t=…,v1=…` over `{t}.{body}`, HMAC-SHA256 in hex, the secret's text as
    /// the key; keyed by the body's `id`.
    Stripe,
    /// `X-Hub-Signature-256: sha256=…` over the body, in hex; keyed by the body's digest.
    GitHub,
    /// `X-Slack-Signature: v0=…` over `v0:{X-Slack-Request-Timestamp}:{body}`, in hex; keyed by
    /// the body's `event_id`, else its digest; a `url_verification` body is the handshake.
    Slack,
    /// Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature` (`v1,…` HMAC
    /// under a `whsec_` secret, `v1a,…` Ed25519 under a `whpk_` public key) over
    /// `{id}.{timestamp}.{body}`, in base64; keyed by the signed id.
    StandardWebhooks,
    /// Svix: Standard Webhooks under `svix-` headers.
    Svix,
    /// `X-Shopify-Hmac-Sha256` over the body, in base64; keyed by the body's digest.
    Shopify,
    /// A generic HMAC-SHA256 over the body.
    Hmac(HmacScheme),
}

impl WebhookScheme {
    /// Its name, as the manifest and the CLI give it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Stripe => "stripe",
            Self::GitHub => "github",
            Self::Slack => "slack",
            Self::StandardWebhooks => "standard_webhooks",
            Self::Svix => "svix",
            Self::Shopify => "shopify",
            Self::Hmac(_) => "hmac",
        }
    }
}

/// A generic HMAC-SHA256 scheme: the header carrying the signature, a prefix before it
/// (`sha256=`), its encoding, and where the key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HmacScheme {
    pub header: String,
    pub prefix: String,
    pub base64: bool,
    /// A top-level field of the signed JSON body to key by (else the body's digest).
    pub key_field: Option<String>,
}

/// A declared webhook source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSource {
    /// Its name: the route is `POST /webhooks/{name}`.
    pub name: String,
    pub scheme: WebhookScheme,
    /// The action each verified event feeds.
    pub action: String,
    /// The environment variable holding its secrets (`JADPO_WEBHOOK_<NAME>_SECRETS` unless
    /// named): `secret` or `old until 2027-01-31T00:00:00Z, new`, comma-separated.
    pub secrets_variable: String,
    /// How far a signed time may be from now, either way (5 minutes).
    pub tolerance: Duration,
    /// How long receipts are kept: past the provider's redelivery horizon (30 days).
    pub retention: Duration,
    /// The largest body accepted (1 MiB).
    pub body_limit: usize,
    /// Requests a second each process takes from the source (100), and how many at once above
    /// that rate (`burst`, 200): past them, `429` before any database work.
    pub rate_per_second: u32,
    pub burst: u32,
}

impl WebhookSource {
    /// A source `name` signed by `scheme` feeding `action`, with the defaults.
    pub fn new(name: &str, scheme: WebhookScheme, action: &str) -> Self {
        Self {
            name: name.to_owned(),
            scheme,
            action: action.to_owned(),
            secrets_variable: format!("JADPO_WEBHOOK_{}_SECRETS", name.to_ascii_uppercase()),
            tolerance: Duration::from_secs(300),
            retention: Duration::from_secs(30 * 86_400),
            body_limit: 1 << 20,
            rate_per_second: 100,
            burst: 200,
        }
    }

    /// Receipts kept for `retention`.
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// A signed time allowed `tolerance` from now.
    #[must_use]
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// Bodies up to `bytes` accepted.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// At most `per_second` requests a second per process, `burst` at once.
    #[must_use]
    pub fn rate(mut self, per_second: u32, burst: u32) -> Self {
        self.rate_per_second = per_second;
        self.burst = burst;
        self
    }

    /// Its secrets read from `variable`.
    #[must_use]
    pub fn secrets_from(mut self, variable: &str) -> Self {
        variable.clone_into(&mut self.secrets_variable);
        self
    }
}
