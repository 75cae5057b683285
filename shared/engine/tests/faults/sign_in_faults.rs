//! A crash at the boundaries of sign-in by email — the request, the relay, the mail's delivery,
//! the sign-in itself — first at each one alone, then at random sets of them hundreds of times,
//! on both adapters. However it crashes, once the person has retried: the latest mail's link signs
//! them in, exactly one session and one customer exist, and every mailed link and code is dead
//! afterwards (used or replaced). Each run prints nothing unless something was lost or repeated.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use jadpo_core::model::sign_in::SignInLimits;
use jadpo_engine::EngineSettings;
use jadpo_engine::sign_in::{Proof, SignInFlowError, request_mail, request_mail_unsent, sign_in};
use jadpo_test_env::{Env, Kind};

const EMAIL: &str = "pat@example.com";

const POINTS: &[&str] = &[
    "sign_in.after_request",
    "sign_in.before_request_commit",
    "relay.after_claim",
    "relay.after_send",
    "deliver.after_load",
    "deliver.after_handled_insert",
    "deliver.after_subscriber",
    "deliver.before_subscriber_commit",
    "deliver.after_subscriber_commit",
    "deliver.after_outcome",
    "sign_in.after_redeem",
    "sign_in.before_session_commit",
];

/// The person's network address.
const SOURCE: Option<&str> = Some("203.0.113.7");

/// Links and codes live a day here: `settle` moves the clock twenty minutes a round.
fn settings() -> EngineSettings {
    let sign_in = SignInLimits {
        lifetime: std::time::Duration::from_secs(86_400),
        ..SignInLimits::default()
    };
    EngineSettings { sign_in, ..EngineSettings::default() }
}

/// The sign-in mails received, oldest first: (link token, code).
fn mails(env: &Env) -> Vec<(String, String)> {
    env.sinks
        .received("mailer")
        .iter()
        .filter_map(|m| {
            let token = m["body"]["link"].as_str()?.split("token=").nth(1)?.to_owned();
            Some((token, m["body"]["code"].as_str()?.to_owned()))
        })
        .collect()
}

/// What went wrong in one run, if anything.
async fn run(kind: Kind, crash: &[&str]) -> Result<(), String> {
    let mut env =
        Env::new(kind, jadpo_app::application().map_err(|e| e.to_string())?, settings()).await;
    for point in crash {
        fail::cfg(*point, "1*return").map_err(|e| e.to_string())?;
    }
    let relay_only = crash.iter().any(|p| p.starts_with("relay."));
    // The person asks until they are told a mail is on its way.
    let mut answered = false;
    for _ in 0..3 {
        let requested = if relay_only {
            request_mail_unsent(&env.engine, EMAIL, "https://shop.test", SOURCE).await
        } else {
            request_mail(&env.engine, EMAIL, "https://shop.test", SOURCE).await
        };
        if requested.is_ok() {
            answered = true;
            break;
        }
    }
    if !answered {
        return Err("the request never succeeded".into());
    }
    env.settle().await;
    let sent = mails(&env);
    let Some((token, _)) = sent.last().cloned() else {
        return Err("lost: no mail was sent".into());
    };
    // They sign in with the latest mail's link, retrying when the server fails.
    let mut signed_in = false;
    for _ in 0..3 {
        match sign_in(&env.engine, EMAIL, Proof::Link(&token), SOURCE).await {
            Ok(_) => {
                signed_in = true;
                break;
            }
            Err(SignInFlowError::Store(_)) => {}
            Err(e) => return Err(format!("lost: the latest link was refused: {e}")),
        }
    }
    for point in POINTS {
        fail::remove(point);
    }
    if !signed_in {
        return Err("lost: the sign-in never succeeded".into());
    }
    for (token, code) in &sent {
        for proof in [Proof::Link(token), Proof::Code(code)] {
            if sign_in(&env.engine, EMAIL, proof, SOURCE).await.is_ok() {
                return Err(format!("repeated: a mailed {proof:?} signed in again"));
            }
        }
    }
    let sessions = env.count("main", "SELECT count(*) AS n FROM jadpo_sessions").await;
    let customers = env.count("main", "SELECT count(*) AS n FROM shop_customers").await;
    if (sessions, customers) != (1, 1) {
        return Err(format!("repeated: {sessions} sessions and {customers} customers"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_survives_a_crash_at_any_boundary() {
    jadpo_test_env::crash_loop(
        POINTS,
        100,
        3,
        |kind, crash| async move { run(kind, &crash).await },
    )
    .await;
}
