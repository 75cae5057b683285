//! W3C Trace Context headers, checked before they are stored.
//!
//! Why: a request's `traceparent` and `tracestate` are written into the outbox with its events and
//! carried on every delivery and log line after. A malformed or oversized header must not ride
//! along (nor cost storage), so one that breaks the W3C format is dropped, with its `tracestate`
//! (the specification ignores `tracestate` without a valid `traceparent`), and the request goes
//! on untraced — it is not refused for it.

/// The longest `tracestate` kept: the specification's 32 members of at most 256 bytes could be
/// longer, but it lets a vendor truncate to 512 and every tracer stays far below.
const TRACESTATE_MAX: usize = 512;
/// The most members a `tracestate` may list.
const TRACESTATE_MEMBERS: usize = 32;

/// The trace headers to keep: both, `traceparent` alone, or neither.
pub(crate) fn checked(
    traceparent: Option<String>,
    tracestate: Option<String>,
) -> (Option<String>, Option<String>) {
    match traceparent.filter(|t| valid_traceparent(t)) {
        Some(parent) => (Some(parent), tracestate.filter(|s| valid_tracestate(s))),
        None => (None, None),
    }
}

/// `version-traceid-parentid-flags` in lowercase hex (`00-<32>-<16>-<2>`); a later version may
/// append fields after a `-` (printable ASCII); version `ff` and all-zero ids are invalid.
fn valid_traceparent(value: &str) -> bool {
    let Some(head) = value.get(..55) else { return false };
    let rest = &value[55..];
    // Version 00 is exactly 55 characters; a later one may append `-`-separated fields.
    let version_ok = if head.starts_with("00") {
        rest.is_empty()
    } else {
        !head.starts_with("ff") && (rest.is_empty() || rest.starts_with('-'))
    };
    let fields: Vec<&str> = head.split('-').collect();
    let hex = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
    // What a later version appends is kept too: printable ASCII only, like the rest.
    version_ok
        && value.len() <= 256
        && value.bytes().all(|b| b.is_ascii_graphic())
        && fields.len() == 4
        && hex(fields[0], 2)
        && hex(fields[1], 32)
        && nonzero(fields[1])
        && hex(fields[2], 16)
        && nonzero(fields[2])
        && hex(fields[3], 2)
}

/// Comma-separated `key=value` members, printable ASCII, bounded in length and count.
fn valid_tracestate(value: &str) -> bool {
    let members: Vec<&str> = value.split(',').map(str::trim).filter(|m| !m.is_empty()).collect();
    value.len() <= TRACESTATE_MAX
        && value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !members.is_empty()
        && members.len() <= TRACESTATE_MEMBERS
        && members
            .iter()
            .all(|m| m.split_once('=').is_some_and(|(k, v)| !k.is_empty() && !v.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::checked;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn kept(parent: &str, state: &str) -> (Option<String>, Option<String>) {
        checked(Some(parent.to_owned()), Some(state.to_owned()))
    }

    #[test]
    fn a_valid_pair_is_kept() {
        assert_eq!(
            kept(PARENT, "congo=t61rcWkgMzE"),
            (Some(PARENT.into()), Some("congo=t61rcWkgMzE".into()))
        );
        let later = format!("cc{}-what-comes-next", &PARENT[2..]);
        assert_eq!(
            kept(&later, "a=1").0.as_deref(),
            Some(later.as_str()),
            "a later version's extra fields"
        );
    }

    #[test]
    fn a_malformed_traceparent_is_dropped_with_its_tracestate() {
        let upper = PARENT.to_uppercase();
        let zero_trace = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        let zero_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
        let forbidden = format!("ff{}", &PARENT[2..]);
        let long = format!("{PARENT}-{}", "a".repeat(10_000));
        let trailing = format!("{PARENT}-extra");
        for bad in
            ["", "00-xyz", upper.as_str(), zero_trace, zero_parent, &forbidden, &long, &trailing]
        {
            assert_eq!(kept(bad, "a=1"), (None, None), "{bad:.60}");
        }
    }

    #[test]
    fn a_malformed_tracestate_alone_is_dropped() {
        let many = (0..33).map(|i| format!("k{i}=v")).collect::<Vec<_>>().join(",");
        let long = format!("a={}", "b".repeat(600));
        for bad in ["", "novalue", "=v", "k=", "k=v\u{7}", many.as_str(), long.as_str()] {
            assert_eq!(kept(PARENT, bad), (Some(PARENT.into()), None), "{bad:.60}");
        }
    }
}

#[cfg(test)]
mod arbitrary {
    //! Arbitrary trace headers (property-based): checking never panics, and what is kept is
    //! within the bounds stored (ASCII, at most 256 and 512 characters), a `tracestate` never
    //! without its `traceparent`.

    use proptest::prelude::*;

    use super::checked;

    fn parent() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.{0,220})?",
            "[0-9a-fA-F-]{50,60}",
            ".{0,300}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(5_000),
            ..ProptestConfig::default()
        })]

        #[test]
        fn kept_headers_are_bounded_ascii(
            parent in prop::option::of(parent()),
            state in prop::option::of(prop_oneof!["([a-z0-9]{1,8}=[!-~]{1,16},?){0,40}", ".{0,600}"]),
        ) {
            let (kept_parent, kept_state) = checked(parent, state);
            if let Some(p) = &kept_parent {
                prop_assert!(p.len() <= 256 && p.is_ascii() && p.len() >= 55, "{p:?}");
            }
            if let Some(s) = &kept_state {
                prop_assert!(kept_parent.is_some(), "a tracestate kept alone: {s:?}");
                prop_assert!(s.len() <= 512 && s.is_ascii(), "{s:?}");
            }
        }
    }
}
