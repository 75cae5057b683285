//! A crash at the boundaries of the passkey ceremonies — a ceremony kept, a ceremony taken, a
//! passkey stored, a session started — first at each one alone, then at random sets of them
//! hundreds of times, on both adapters. However it crashes, once the person has retried (a
//! ceremony that failed is started again, as a page does): exactly one passkey is registered, two
//! sign-ins each started one session, and no response that was presented registers or signs
//! anyone in again. Each run prints nothing unless something was lost or
//! repeated.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use jadpo_engine::passkeys::{RelyingParty, register, register_options, sign_in, sign_in_options};
use jadpo_engine::sign_in::SignInFlowError;
use jadpo_test_env::authenticator::Authenticator;
use jadpo_test_env::{Env, Kind};
use serde_json::Value;

const ORIGIN: &str = "https://shop.test";

const POINTS: &[&str] = &[
    "passkey.before_challenge_commit",
    "passkey.after_take",
    "passkey.before_register_commit",
    "sign_in.before_session_commit",
];

/// Whether an error is the injected crash (the server failed: the person tries again).
fn crashed(e: &SignInFlowError) -> bool {
    matches!(e, SignInFlowError::Store(_))
}

/// Registers `device`'s passkey for `user`, starting over after each crash; every response
/// presented, in `presented`.
async fn registered(
    env: &Env,
    rp: &RelyingParty,
    device: &mut Authenticator,
    presented: &mut Vec<Value>,
) -> Result<(), String> {
    for _ in 0..4 {
        let options = match register_options(&env.engine, rp, "pat").await {
            Ok(options) => options,
            Err(e) if crashed(&e) => continue,
            Err(e) => return Err(format!("lost: registration options refused: {e}")),
        };
        let created = device.create(&options);
        presented.push(created.clone());
        match register(&env.engine, rp, "pat", created.to_string().as_bytes()).await {
            Ok(_) => return Ok(()),
            Err(e) if crashed(&e) => {}
            Err(e) => return Err(format!("lost: the registration was refused: {e}")),
        }
    }
    Err("lost: the passkey was never registered".into())
}

/// Signs in with `device`, starting over after each crash.
async fn signed_in(
    env: &Env,
    rp: &RelyingParty,
    device: &mut Authenticator,
    presented: &mut Vec<Value>,
) -> Result<(), String> {
    for _ in 0..4 {
        let options = match sign_in_options(&env.engine, rp).await {
            Ok(options) => options,
            Err(e) if crashed(&e) => continue,
            Err(e) => return Err(format!("lost: sign-in options refused: {e}")),
        };
        let assertion = device.get(&options);
        presented.push(assertion.clone());
        match sign_in(&env.engine, rp, assertion.to_string().as_bytes()).await {
            Ok(_) => return Ok(()),
            Err(e) if crashed(&e) => {}
            Err(e) => return Err(format!("lost: the sign-in was refused: {e}")),
        }
    }
    Err("lost: the sign-in never succeeded".into())
}

/// What went wrong in one run, if anything.
async fn run(kind: Kind, crash: &[&str]) -> Result<(), String> {
    let env = Env::shop(kind).await;
    let customer = "INSERT INTO shop_customers (id, email) VALUES ('pat', 'pat@example.com')";
    env.store("main").execute_once(customer, &[]).await.map_err(|e| e.to_string())?;
    let rp = RelyingParty::from_public_url(ORIGIN).map_err(|e| e.to_string())?;
    let mut device = Authenticator::new(3, ORIGIN, "shop.test");
    for point in crash {
        fail::cfg(*point, "1*return").map_err(|e| e.to_string())?;
    }
    let (mut registrations, mut assertions) = (Vec::new(), Vec::new());
    let outcome = async {
        registered(&env, &rp, &mut device, &mut registrations).await?;
        signed_in(&env, &rp, &mut device, &mut assertions).await?;
        signed_in(&env, &rp, &mut device, &mut assertions).await
    }
    .await;
    for point in POINTS {
        fail::remove(point);
    }
    outcome?;
    for response in &assertions {
        if sign_in(&env.engine, &rp, response.to_string().as_bytes()).await.is_ok() {
            return Err("repeated: a presented assertion signed in again".into());
        }
    }
    for response in &registrations {
        if register(&env.engine, &rp, "pat", response.to_string().as_bytes()).await.is_ok() {
            return Err("repeated: a presented registration registered again".into());
        }
    }
    let passkeys = env.count("main", "SELECT count(*) AS n FROM jadpo_passkeys").await;
    let sessions = env.count("main", "SELECT count(*) AS n FROM jadpo_sessions").await;
    if (passkeys, sessions) != (1, 2) {
        return Err(format!("lost or repeated: {passkeys} passkeys and {sessions} sessions"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passkeys_survive_a_crash_at_any_boundary() {
    jadpo_test_env::crash_loop(
        POINTS,
        100,
        4,
        |kind, crash| async move { run(kind, &crash).await },
    )
    .await;
}
