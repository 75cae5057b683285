//! The request digest: what idempotency compares a repeated request against and what a step's
//! fingerprint is made of. Canonical JSON makes the same request sent with other spacing or key
//! order the same request, so a client's serializer cannot make a retry look new. And the one
//! SHA-256 in hex the engine writes of bytes (a file's, a webhook's body and key).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes`, in lower-case hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(bytes))
}

/// The digest idempotency compares: SHA-256 over the method, the path and the body's canonical
/// JSON, so the same request sent with other spacing or key order is the same request.
pub fn request_digest(method: &str, path: &str, body: &Value) -> String {
    let mut canonical = String::new();
    canonical_json(body, &mut canonical);
    let mut hash = Sha256::new();
    for part in [method, "\n", path, "\n", canonical.as_str()] {
        hash.update(part.as_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` written with no whitespace and every object's keys in byte order; strings and numbers
/// as `serde_json` writes them (so `1` and `1.0` stay different numbers).
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::request_digest;

    fn parsed(text: &str) -> serde_json::Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn digests_differ_by_method_path_and_body() {
        let body = parsed(r#"{"a": 1, "b": [1, {"d": "x", "c": null}]}"#);
        let base = request_digest("POST", "/actions/a", &body);
        assert_eq!(base.len(), 64);
        assert_eq!(base, request_digest("POST", "/actions/a", &body));
        assert_ne!(base, request_digest("POST", "/actions/b", &body));
        assert_ne!(base, request_digest("PUT", "/actions/a", &body));
        for other in [
            r#"{"a": 2, "b": [1, {"d": "x", "c": null}]}"#,
            r#"{"a": 1, "b": [{"d": "x", "c": null}, 1]}"#,
            r#"{"a": 1.0, "b": [1, {"d": "x", "c": null}]}"#,
            r#"{"a": 1, "b": [1, {"d": "x"}]}"#,
            r#"{"a": "1", "b": [1, {"d": "x", "c": null}]}"#,
        ] {
            assert_ne!(base, request_digest("POST", "/actions/a", &parsed(other)), "{other}");
        }
    }

    #[test]
    fn the_same_json_spaced_or_ordered_otherwise_has_the_same_digest() {
        let base = request_digest("POST", "/a", &parsed(r#"{"a":1,"b":[1,{"c":null,"d":"x"}]}"#));
        for same in [
            r#"{ "b" : [ 1 , { "d" : "x" , "c" : null } ] , "a" : 1 }"#,
            "{\n  \"a\": 1,\n  \"b\": [1, {\"d\": \"\\u0078\", \"c\": null}]\n}",
        ] {
            assert_eq!(base, request_digest("POST", "/a", &parsed(same)), "{same}");
        }
    }
}
