//! Each preset against its provider's published vector (GitHub's and Slack's documentation,
//! Standard Webhooks' own library tests), or, where a provider publishes none (Stripe, Shopify,
//! Standard Webhooks' v1a), against a vector computed outside this code (Python's `hmac`, and
//! OpenSSL's Ed25519 through Python's `cryptography` under RFC 8032's first test key); then every
//! way a request is refused.

use super::*;

fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(seconds, 0).unwrap_or_default()
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
}

fn secret(scheme: &Scheme, text: &str) -> Secret {
    Secret::parse(scheme, text, None).unwrap_or_else(|e| panic!("{e}"))
}

fn check(
    scheme: &Scheme,
    secrets: &[Secret],
    pairs: &[(&str, &str)],
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<Verified, VerifyError> {
    let headers = headers(pairs);
    verify(scheme, secrets, &Request { headers: &headers, body }, now, Duration::minutes(5))
}

const GITHUB_SIG: &str = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
const SLACK_TS: i64 = 1_531_420_618;
const SLACK_BODY: &[u8] = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
const SLACK_SIG: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
const SW_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SW_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const SW_TS: i64 = 1_614_265_330;
const SW_BODY: &[u8] = br#"{"test": 2432232314}"#;
const SW_SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const SW_PUBLIC: &str = "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";
const SW_V1A: &str =
    "v1a,fldxM4gAKugP6nnt1hdz3sgGfZ6d99nzrMFnZOELIxbzEHoVmAb2ADpkJK7zgPePmPsle0zV9jSeGlHFG2NVAw==";
const STRIPE_BODY: &[u8] =
    br#"{"id":"evt_1Jadpo","object":"event","type":"payment_intent.succeeded"}"#;
const STRIPE_SIG: &str =
    "t=1700000000,v1=d9fd9c416f1181ecb94467fec33dd35480ebd9ddf9002b8e1d714f91f64dcdad";
const SHOPIFY_BODY: &[u8] = br#"{"id":820982911946154508,"email":"jon@example.com"}"#;
const SHOPIFY_SIG: &str = "kU+wDCk8SLTHvfqlcGblsA3mhq1QjtjDfNfCnb9CPf8=";

fn sw_headers(prefix: &str, signature: &str) -> Vec<(String, String)> {
    headers(&[
        (&format!("{prefix}-id"), SW_ID),
        (&format!("{prefix}-timestamp"), &SW_TS.to_string()),
        (&format!("{prefix}-signature"), signature),
    ])
}

fn sw_check(
    scheme: &Scheme,
    secrets: &[Secret],
    h: &[(String, String)],
    body: &[u8],
) -> Result<Verified, VerifyError> {
    verify(scheme, secrets, &Request { headers: h, body }, at(SW_TS), Duration::minutes(5))
}

#[test]
fn github_s_published_vector_verifies_and_keys_by_the_body() {
    let s = [secret(&Scheme::GitHub, "It's a Secret to Everybody")];
    let delivery = ("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    let one = check(
        &Scheme::GitHub,
        &s,
        &[("X-Hub-Signature-256", GITHUB_SIG), delivery],
        b"Hello, World!",
        at(0),
    );
    let one = one.unwrap_or_else(|e| panic!("{e}"));
    let digest = "sha256:dffd6021bb2bd5b0af676290809ec3a53191dd81c7f70a4b28688a362182986f";
    assert_eq!((one.key.as_str(), one.signed_at), (digest, None));
    // The delivery header is unsigned: altered or stripped, the event keeps its key.
    let altered = ("X-GitHub-Delivery", "00000000-0000-0000-0000-000000000000");
    for extra in [vec![altered], vec![]] {
        let mut pairs = vec![("X-Hub-Signature-256", GITHUB_SIG)];
        pairs.extend(extra);
        let again = check(&Scheme::GitHub, &s, &pairs, b"Hello, World!", at(0));
        assert_eq!(again.map(|v| v.key).ok().as_deref(), Some(digest));
    }
    let tampered =
        check(&Scheme::GitHub, &s, &[("X-Hub-Signature-256", GITHUB_SIG)], b"Hello, World?", at(0));
    assert_eq!(tampered, Err(VerifyError::NoMatch));
}

#[test]
fn slack_s_published_vector_verifies_within_its_tolerance() {
    let s = [secret(&Scheme::Slack, "8f742231b10e8888abcd99yyyzzz85a5")];
    let ts = SLACK_TS.to_string();
    let pairs = [("X-Slack-Request-Timestamp", ts.as_str()), ("X-Slack-Signature", SLACK_SIG)];
    let ok = check(&Scheme::Slack, &s, &pairs, SLACK_BODY, at(SLACK_TS + 299));
    assert_eq!(ok.map(|v| v.signed_at), Ok(Some(at(SLACK_TS))));
    let stale = check(&Scheme::Slack, &s, &pairs, SLACK_BODY, at(SLACK_TS + 301));
    assert!(matches!(stale, Err(VerifyError::Stale { tolerance_s: 300, .. })), "{stale:?}");
    let future = check(&Scheme::Slack, &s, &pairs, SLACK_BODY, at(SLACK_TS - 301));
    assert!(matches!(future, Err(VerifyError::Future { .. })), "{future:?}");
    // The timestamp is signed: moved to look fresh, the signature no longer matches.
    let moved = (SLACK_TS + 1000).to_string();
    let replay = [("X-Slack-Request-Timestamp", moved.as_str()), ("X-Slack-Signature", SLACK_SIG)];
    let replay = check(&Scheme::Slack, &s, &replay, SLACK_BODY, at(SLACK_TS + 1000));
    assert_eq!(replay, Err(VerifyError::NoMatch));
}

#[test]
fn slack_s_url_verification_is_answered_with_its_challenge() {
    let secret_text = "slack-signing-secret";
    let s = [secret(&Scheme::Slack, secret_text)];
    let body = br#"{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
    let content = [b"v0:1700000000:".as_slice(), body].concat();
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret_text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    mac.update(&content);
    let signature = format!("v0={}", data_encoding::HEXLOWER.encode(&mac.finalize().into_bytes()));
    let pairs =
        [("X-Slack-Request-Timestamp", "1700000000"), ("X-Slack-Signature", signature.as_str())];
    let verified = check(&Scheme::Slack, &s, &pairs, body, at(1_700_000_000));
    let challenge = verified.ok().and_then(|v| v.challenge);
    assert_eq!(challenge.as_deref(), Some("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"));
}

#[test]
fn standard_webhooks_published_vector_verifies_under_both_header_sets() {
    for (scheme, prefix) in [(Scheme::StandardWebhooks, "webhook"), (Scheme::Svix, "svix")] {
        let s = [secret(&scheme, SW_SECRET)];
        let verified = sw_check(&scheme, &s, &sw_headers(prefix, SW_SIG), SW_BODY);
        assert_eq!(verified.map(|v| v.key).as_deref(), Ok(SW_ID), "{scheme:?}");
        // Several signatures in one header (a rotation on the sender's side): any one matches.
        let several = format!("v1,AAAA {SW_SIG}");
        let verified = sw_check(&scheme, &s, &sw_headers(prefix, &several), SW_BODY);
        assert!(verified.is_ok(), "{scheme:?}: {verified:?}");
    }
}

#[test]
fn standard_webhooks_v1a_verifies_under_the_public_key() {
    let scheme = Scheme::StandardWebhooks;
    let s = [secret(&scheme, SW_PUBLIC)];
    let verified = sw_check(&scheme, &s, &sw_headers("webhook", SW_V1A), SW_BODY);
    assert_eq!(verified.map(|v| v.key).as_deref(), Ok(SW_ID));
    let tampered = sw_check(&scheme, &s, &sw_headers("webhook", SW_V1A), br#"{"test": 1}"#);
    assert_eq!(tampered, Err(VerifyError::NoMatch));
    // A v1 signature is no proof under a public key, nor v1a under an HMAC secret.
    assert_eq!(
        sw_check(&scheme, &s, &sw_headers("webhook", SW_SIG), SW_BODY),
        Err(VerifyError::NoMatch)
    );
    let hmac_only = [secret(&scheme, SW_SECRET)];
    let crossed = sw_check(&scheme, &hmac_only, &sw_headers("webhook", SW_V1A), SW_BODY);
    assert_eq!(crossed, Err(VerifyError::NoMatch));
}

#[test]
fn an_altered_signed_id_is_refused_not_taken_for_a_new_event() {
    let scheme = Scheme::StandardWebhooks;
    let s = [secret(&scheme, SW_SECRET)];
    let mut h = sw_headers("webhook", SW_SIG);
    h[0].1 = "msg_another".into();
    assert_eq!(sw_check(&scheme, &s, &h, SW_BODY), Err(VerifyError::NoMatch));
    h.remove(0);
    let stripped = sw_check(&scheme, &s, &h, SW_BODY);
    assert_eq!(stripped, Err(VerifyError::MissingHeader("webhook-id".into())));
}

#[test]
fn stripe_verifies_and_keys_by_the_event_id() {
    let s = [secret(&Scheme::Stripe, "whsec_jadpo_test_secret")];
    let pairs = [("Stripe-Signature", STRIPE_SIG)];
    let verified = check(&Scheme::Stripe, &s, &pairs, STRIPE_BODY, at(1_700_000_100));
    let verified = verified.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (verified.key.as_str(), verified.signed_at),
        ("evt_1Jadpo", Some(at(1_700_000_000)))
    );
    let unknown_scheme = [("Stripe-Signature", "t=1700000000,v0=d9fd9c41")];
    let refused = check(&Scheme::Stripe, &s, &unknown_scheme, STRIPE_BODY, at(1_700_000_000));
    assert_eq!(refused, Err(VerifyError::NoMatch), "only v1 signatures count");
    let no_t = [(
        "Stripe-Signature",
        "v1=d9fd9c416f1181ecb94467fec33dd35480ebd9ddf9002b8e1d714f91f64dcdad",
    )];
    let refused = check(&Scheme::Stripe, &s, &no_t, STRIPE_BODY, at(1_700_000_000));
    assert!(matches!(refused, Err(VerifyError::Malformed(_))), "{refused:?}");
}

#[test]
fn shopify_and_generic_hmac_verify_over_the_body() {
    let s = [secret(&Scheme::Shopify, "shopify_jadpo_secret")];
    let pairs = [("X-Shopify-Hmac-Sha256", SHOPIFY_SIG), ("X-Shopify-Webhook-Id", "b54557e4")];
    let verified = check(&Scheme::Shopify, &s, &pairs, SHOPIFY_BODY, at(0));
    assert!(verified.is_ok_and(|v| v.key.starts_with("sha256:")));
    let generic = Scheme::Hmac(HmacScheme {
        header: "X-Signature".into(),
        prefix: String::new(),
        base64: true,
        key_field: Some("id".into()),
    });
    let s = [secret(&generic, "shopify_jadpo_secret")];
    let verified = check(&generic, &s, &[("x-signature", SHOPIFY_SIG)], SHOPIFY_BODY, at(0));
    assert_eq!(verified.map(|v| v.key).as_deref(), Ok("820982911946154508"));
    let keyless = check(&generic, &s, &[("x-signature", SHOPIFY_SIG)], b"not json", at(0));
    assert_eq!(keyless, Err(VerifyError::NoMatch), "the signature is checked before the key");
}

#[test]
fn a_rotated_secret_verifies_until_it_expires() {
    let scheme = Scheme::GitHub;
    let old = Secret::parse(&scheme, "It's a Secret to Everybody", Some(at(1000)))
        .unwrap_or_else(|e| panic!("{e}"));
    let new = secret(&scheme, "the next secret");
    let both = [new, old];
    let pairs = [("X-Hub-Signature-256", GITHUB_SIG)];
    assert!(check(&scheme, &both, &pairs, b"Hello, World!", at(999)).is_ok());
    assert_eq!(
        check(&scheme, &both, &pairs, b"Hello, World!", at(1000)),
        Err(VerifyError::NoMatch)
    );
    assert_eq!(
        check(&scheme, &both[1..], &pairs, b"Hello, World!", at(1000)),
        Err(VerifyError::NoSecret)
    );
}

#[test]
fn ambiguous_or_missing_headers_and_bad_secrets_are_refused() {
    let s = [secret(&Scheme::GitHub, "It's a Secret to Everybody")];
    let twice = [("X-Hub-Signature-256", GITHUB_SIG), ("x-hub-signature-256", "sha256=00")];
    let refused = check(&Scheme::GitHub, &s, &twice, b"Hello, World!", at(0));
    assert!(matches!(refused, Err(VerifyError::Malformed(m)) if m.contains("more than once")));
    let missing = check(&Scheme::GitHub, &s, &[], b"Hello, World!", at(0));
    assert_eq!(missing, Err(VerifyError::MissingHeader("x-hub-signature-256".into())));
    let not_hex = check(&Scheme::GitHub, &s, &[("X-Hub-Signature-256", "sha256=zz")], b"", at(0));
    assert!(matches!(not_hex, Err(VerifyError::Malformed(_))), "{not_hex:?}");
    for (scheme, text) in [
        (Scheme::StandardWebhooks, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        (Scheme::Svix, "whsec_not*base64"),
        (Scheme::StandardWebhooks, "whpk_AAAA"),
        (Scheme::GitHub, ""),
    ] {
        let bad = Secret::parse(&scheme, text, None);
        assert!(matches!(bad, Err(VerifyError::BadSecret(_))), "{scheme:?} {text:?}: {bad:?}");
    }
}
