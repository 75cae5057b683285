use chrono::{DateTime, Duration, Utc};

use super::*;

fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default()
}

fn policy() -> BreakerPolicy {
    BreakerPolicy {
        failures_to_open: 3,
        first_pause: std::time::Duration::from_secs(10),
        max_pause: std::time::Duration::from_secs(25),
        probe_timeout: std::time::Duration::from_secs(60),
        alert_after: std::time::Duration::from_secs(300),
    }
}

fn opened() -> Breaker {
    let mut b = Breaker::closed("mailer");
    for i in 0..3 {
        b.record(&format!("d{i}"), AttemptResult::ConnectionFailed, t0(), &policy());
    }
    b
}

#[test]
fn a_run_of_connection_failures_opens_it_and_a_success_resets_the_run() {
    let mut b = Breaker::closed("mailer");
    let p = policy();
    assert_eq!(b.record("a", AttemptResult::ConnectionFailed, t0(), &p), Transition::None);
    assert_eq!(b.record("b", AttemptResult::ConnectionFailed, t0(), &p), Transition::None);
    assert_eq!(b.record("c", AttemptResult::Success, t0(), &p), Transition::None);
    assert_eq!(b.failures, 0, "a success ends the run");
    assert_eq!(b.record("d", AttemptResult::Other, t0(), &p), Transition::None);
    assert_eq!(b.state, State::Closed, "other failures say nothing about the connection");
    let b = opened();
    assert_eq!(b.state, State::Open);
    assert_eq!(b.reopen_at, Some(t0() + Duration::seconds(10)));
    assert_eq!(b.alert_at, Some(t0() + Duration::seconds(300)));
}

#[test]
fn while_open_deliveries_are_held_then_exactly_one_probe_goes() {
    let p = policy();
    let mut b = opened();
    assert_eq!(
        b.gate("x", t0() + Duration::seconds(5), &p),
        Gate::Hold { until: t0() + Duration::seconds(10) }
    );
    let at = t0() + Duration::seconds(10);
    assert_eq!(b.gate("probe", at, &p), Gate::Probe);
    assert_eq!(b.state, State::HalfOpen);
    assert_eq!(
        b.gate("probe", at, &p),
        Gate::Probe,
        "the probe's own redelivery is still the probe"
    );
    assert_eq!(b.gate("other", at, &p), Gate::Hold { until: at + Duration::seconds(60) });
    // A probe that never reports is presumed lost after the probe timeout.
    assert_eq!(b.gate("other", at + Duration::seconds(60), &p), Gate::Probe);
    assert_eq!(b.probe_delivery.as_deref(), Some("other"));
}

#[test]
fn a_failed_probe_reopens_with_a_longer_pause_up_to_the_maximum() {
    let p = policy();
    let mut b = opened();
    let mut at = t0() + Duration::seconds(10);
    let mut pauses = Vec::new();
    for i in 0..3 {
        assert_eq!(b.gate(&format!("p{i}"), at, &p), Gate::Probe);
        assert_eq!(
            b.record(&format!("p{i}"), AttemptResult::ConnectionFailed, at, &p),
            Transition::Reopened
        );
        pauses.push(b.pause_ms);
        at = b.reopen_at.unwrap_or(at);
    }
    assert_eq!(pauses, [20_000, 25_000, 25_000]);
    assert_eq!(b.opened_at, Some(t0()), "the episode started when it first opened");
}

#[test]
fn a_successful_probe_closes_it_and_an_inconclusive_one_frees_the_probe() {
    let p = policy();
    let mut b = opened();
    let at = t0() + Duration::seconds(10);
    assert_eq!(b.gate("p", at, &p), Gate::Probe);
    assert_eq!(b.record("p", AttemptResult::Other, at, &p), Transition::None);
    assert_eq!((b.state, b.reopen_at), (State::Open, Some(at)));
    assert_eq!(b.gate("q", at, &p), Gate::Probe);
    assert_eq!(
        b.record("late", AttemptResult::Success, at, &p),
        Transition::None,
        "only the probe closes it"
    );
    assert_eq!(b.record("q", AttemptResult::Success, at, &p), Transition::Closed);
    assert_eq!(b, Breaker::closed("mailer"));
}
