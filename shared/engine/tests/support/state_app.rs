//! The application the keyed-state tests share: one store, an event `rates.changed` that a
//! poll-like loop emits as it advances its state, and a subscriber of it that does nothing; and
//! the helpers that read what the loop left.

#![allow(dead_code, reason = "each test binary uses part of this module")]

use async_trait::async_trait;
use jadpo_application::{
    Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber,
};
use jadpo_test_env::Env;

struct Noted;

#[async_trait]
impl Subscriber for Noted {
    async fn handle(&self, _: &mut HandlerContext<'_>, _: &Event) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// The keyed-state tests' application.
pub(crate) fn app() -> Application {
    Application::builder("state")
        .store("main")
        .event("rates.changed")
        .subscriber("note_rate", "rates.changed", "main", RetryPolicy::default(), Noted)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Events the loop emitted, and how many distinct requests (state versions) they came from.
pub(crate) async fn emitted(env: &Env) -> (i64, i64) {
    let all = "SELECT count(*) AS n FROM jadpo_outbox WHERE source = 'poll:rates'";
    let distinct =
        "SELECT count(DISTINCT request_id) AS n FROM jadpo_outbox WHERE source = 'poll:rates'";
    (env.count("main", all).await, env.count("main", distinct).await)
}
