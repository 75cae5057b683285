//! Conformance cases for step records: a run held by one runner at a time under a fenced lease,
//! its steps recorded sent then answered, finished only with the handler's transaction, and a
//! diverged run kept for an operator. Time is passed in; nothing sleeps.

use chrono::{DateTime, Duration, Utc};
use jadpo_core::Store;
use jadpo_core::model::step::{RunGrant, RunStart, StepAnswered, StepMode, StepSent};

use crate::Fixture;
use crate::cases::{migrated, ok};
use crate::schedule_cases::t0;

const RUN: &str = "d-1";

fn start(now: DateTime<Utc>, lease_s: i64) -> RunStart<'static> {
    RunStart {
        run_key: RUN,
        action: "charge_then_mail",
        build: "b1",
        mode: StepMode::Recorded,
        now,
        lease_until: now + Duration::seconds(lease_s),
    }
}

async fn acquire(store: &dyn Store, now: DateTime<Utc>) -> RunGrant {
    ok(store.step_run_acquire(&start(now, 60)).await, "acquire")
}

fn generation(grant: &RunGrant) -> i64 {
    match grant {
        RunGrant::Acquired { generation, .. } => *generation,
        other => panic!("expected the run to be acquired, got {other:?}"),
    }
}

fn sent<'a>(generation: i64, step_no: u32, key: &'a str, now: DateTime<Utc>) -> StepSent<'a> {
    StepSent {
        run_key: RUN,
        generation,
        step_no,
        operation: "payments:/charges",
        fingerprint: Some("f0"),
        idempotency_key: key,
        shape: r#"["payments:/charges"]"#,
        now,
        lease_until: now + Duration::seconds(60),
    }
}

fn answered(generation: i64, step_no: u32, now: DateTime<Utc>) -> StepAnswered<'static> {
    StepAnswered { run_key: RUN, generation, step_no, sealed: Some((b"sealed", "k1")), now }
}

/// A second runner is refused while the first holds the run; once the lease expires it takes
/// the run over with the steps recorded so far, and the first runner can then record no step,
/// record no answer and commit nothing.
pub async fn a_run_has_one_runner_and_a_lost_one_records_nothing(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = t0();
    let first = generation(&acquire(store.as_ref(), now).await);
    assert!(ok(store.step_sent(&sent(first, 0, "d-1.0", now)).await, "sent"));
    let held = acquire(store.as_ref(), now + Duration::seconds(30)).await;
    assert_eq!(held, RunGrant::Held { until: now + Duration::seconds(60) });
    let later = now + Duration::seconds(61);
    let second = acquire(store.as_ref(), later).await;
    let RunGrant::Acquired { generation: g2, first_started_at, steps } = second else {
        panic!("not taken over: {second:?}");
    };
    assert!(g2 > first);
    assert_eq!(first_started_at, now);
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].answered_at, None, "sent, never answered");
    assert!(!ok(store.step_sent(&sent(first, 1, "d-1.1", later)).await, "stale sent"));
    assert!(!ok(store.step_answered(&answered(first, 0, later)).await, "stale answer"));
    let mut tx = ok(store.begin().await, "begin");
    assert!(!ok(store.step_run_finish(tx.as_mut(), RUN, first, None, later).await, "stale finish"));
    ok(tx.rollback().await, "rollback");
    let view = ok(store.step_run_get(RUN).await, "get").unwrap_or_else(|| panic!("no record"));
    assert_eq!(view.steps.len(), 1, "the lost runner added no step");
    assert_eq!(view.steps[0].answered_at, None, "nor an answer");
    assert_eq!(view.runner_generation, g2);
}

/// A step is recorded as sent, sent again under the same key (its first send kept), then
/// answered with its sealed answer; a released run is taken at once by the next attempt.
pub async fn steps_are_recorded_sent_then_answered(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = t0();
    let g1 = generation(&acquire(store.as_ref(), now).await);
    assert!(ok(store.step_sent(&sent(g1, 0, "d-1.0", now)).await, "sent"));
    assert!(ok(store.step_run_release(RUN, g1, now).await, "release"));
    let again = now + Duration::seconds(5);
    let g2 = generation(&acquire(store.as_ref(), again).await);
    assert!(ok(store.step_sent(&sent(g2, 0, "d-1.0", again)).await, "sent again"));
    assert!(ok(store.step_answered(&answered(g2, 0, again)).await, "answered"));
    let view = ok(store.step_run_get(RUN).await, "get").unwrap_or_else(|| panic!("no record"));
    let step = &view.steps[0];
    assert_eq!((step.first_sent_at, step.sent_at, step.answered_at), (now, again, Some(again)));
    assert_eq!(step.sealed_answer, Some((b"sealed".to_vec(), "k1".to_owned())));
    assert_eq!(step.fingerprint.as_deref(), Some("f0"));
    assert_eq!(step.idempotency_key, "d-1.0");
    assert_eq!(view.step_shape, r#"["payments:/charges"]"#);
    assert_eq!((view.action.as_str(), view.build.as_str()), ("charge_then_mail", "b1"));
    assert_eq!(view.mode, StepMode::Recorded);
    assert_eq!(view.finished_at, None);
}

/// A step's answer commits with the next step's sent row (a rolled-back transaction leaves
/// neither), an answer to a step never sent is refused, and a finished run takes no answer.
pub async fn an_answer_commits_with_the_next_step_sent(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = t0();
    let g = generation(&acquire(store.as_ref(), now).await);
    assert!(ok(store.step_sent(&sent(g, 0, "d-1.0", now)).await, "sent"));
    let steps = |view: Option<jadpo_core::model::step::StepRecordView>| {
        let view = view.unwrap_or_else(|| panic!("no record"));
        view.steps.iter().map(|s| (s.step_no, s.answered_at.is_some())).collect::<Vec<_>>()
    };
    for commit in [false, true] {
        let mut tx = ok(store.begin().await, "begin");
        assert!(ok(store.step_sent_in(tx.as_mut(), &sent(g, 1, "d-1.1", now)).await, "sent 1"));
        ok(store.step_answer_in(tx.as_mut(), &answered(g, 0, now)).await, "answer 0");
        if commit {
            ok(tx.commit().await, "commit");
        } else {
            ok(tx.rollback().await, "rollback");
            let view = ok(store.step_run_get(RUN).await, "get");
            assert_eq!(steps(view), [(0, false)], "rolled back: neither the answer nor the step");
        }
    }
    let view = ok(store.step_run_get(RUN).await, "get");
    assert_eq!(steps(view), [(0, true), (1, false)]);
    let mut tx = ok(store.begin().await, "begin");
    let never_sent = store.step_answer_in(tx.as_mut(), &answered(g, 7, now)).await;
    assert!(never_sent.is_err(), "an answer to a step never sent: {never_sent:?}");
    ok(tx.rollback().await, "rollback");
    let mut tx = ok(store.begin().await, "begin");
    assert!(ok(store.step_run_finish(tx.as_mut(), RUN, g, None, now).await, "finish"));
    ok(tx.commit().await, "commit");
    assert!(!ok(store.step_answered(&answered(g, 1, now)).await, "an answer after the finish"));
    let view = ok(store.step_run_get(RUN).await, "get");
    assert_eq!(steps(view), [(0, true), (1, false)], "the finished run's steps unchanged");
}

/// The last step's answer written with the run's finish commits with the handler's
/// transaction: rolled back, neither the answer nor the finish; a stale generation records
/// neither; committed, both.
pub async fn the_last_answer_commits_with_the_runs_finish(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = t0();
    let first = generation(&acquire(store.as_ref(), now).await);
    assert!(ok(store.step_sent(&sent(first, 0, "d-1.0", now)).await, "sent"));
    let view = || async {
        let view = ok(store.step_run_get(RUN).await, "get");
        let view = view.unwrap_or_else(|| panic!("no record"));
        (view.steps[0].answered_at.is_some(), view.finished_at.is_some())
    };
    let answer = answered(first, 0, now);
    let mut tx = ok(store.begin().await, "begin");
    let finished = store.step_run_finish(tx.as_mut(), RUN, first, Some(&answer), now).await;
    assert!(ok(finished, "finish answering"));
    ok(tx.rollback().await, "rollback");
    assert_eq!(view().await, (false, false), "rolled back: neither the answer nor the finish");
    assert!(ok(store.step_run_release(RUN, first, now).await, "release"));
    let g = generation(&acquire(store.as_ref(), now).await);
    let mut tx = ok(store.begin().await, "begin");
    let stale = store.step_run_finish(tx.as_mut(), RUN, first, Some(&answer), now).await;
    assert!(!ok(stale, "a stale runner's finish"));
    ok(tx.rollback().await, "rollback");
    assert_eq!(view().await, (false, false), "a lost runner records neither");
    let answer = answered(g, 0, now);
    let mut tx = ok(store.begin().await, "begin");
    assert!(ok(store.step_run_finish(tx.as_mut(), RUN, g, Some(&answer), now).await, "finish"));
    ok(tx.commit().await, "commit");
    assert_eq!(view().await, (true, true), "the answer committed with the finish");
    let view = ok(store.step_run_get(RUN).await, "get").unwrap_or_else(|| panic!("no record"));
    assert_eq!(view.steps[0].sealed_answer, Some((b"sealed".to_vec(), "k1".to_owned())));
}

/// Finishing commits with the handler's transaction (a rolled-back finish leaves the run
/// open); a finished run is never acquired again; a diverged one stays diverged with its reason.
pub async fn a_run_finishes_with_its_transaction_and_a_diverged_one_stays_stopped(
    fx: &dyn Fixture,
) {
    let store = migrated(fx).await;
    let now = t0();
    let g = generation(&acquire(store.as_ref(), now).await);
    let mut tx = ok(store.begin().await, "begin");
    assert!(ok(store.step_run_finish(tx.as_mut(), RUN, g, None, now).await, "finish"));
    ok(tx.rollback().await, "rollback");
    assert!(ok(store.step_run_release(RUN, g, now).await, "still open after a rollback"));
    let g = generation(&acquire(store.as_ref(), now).await);
    let mut tx = ok(store.begin().await, "begin");
    assert!(ok(store.step_run_finish(tx.as_mut(), RUN, g, None, now).await, "finish"));
    ok(tx.commit().await, "commit");
    assert_eq!(acquire(store.as_ref(), now + Duration::days(1)).await, RunGrant::Finished);

    let other = RunStart { run_key: "d-2", ..start(now, 60) };
    let grant = ok(store.step_run_acquire(&other).await, "acquire d-2");
    let RunGrant::Acquired { generation: g, .. } = grant else { panic!("{grant:?}") };
    assert!(ok(store.step_run_diverge("d-2", g, "step 0 changed").await, "diverge"));
    let later = RunStart { now: now + Duration::days(1), ..other };
    assert_eq!(
        ok(store.step_run_acquire(&later).await, "acquire diverged"),
        RunGrant::Diverged { reason: "step 0 changed".to_owned() }
    );
    let mut tx = ok(store.begin().await, "begin");
    assert!(!ok(store.step_run_finish(tx.as_mut(), "d-2", g, None, now).await, "a diverged run"));
    ok(tx.rollback().await, "rollback");
}

/// A run left unfinished past the threshold raises one alert, recorded on its row; a second
/// pass raises none, and a run younger than the threshold none.
pub async fn an_unfinished_run_raises_one_alert(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = t0();
    generation(&acquire(store.as_ref(), now).await);
    let young = RunStart { run_key: "d-young", ..start(now + Duration::hours(2), 60) };
    ok(store.step_run_acquire(&young).await, "acquire young");
    let later = now + Duration::hours(2);
    let before = later - Duration::hours(1);
    for expected in [1, 0] {
        let mut tx = ok(store.begin().await, "begin");
        let alerts = ok(store.step_unfinished_alerts(tx.as_mut(), before, later, 10).await, "a");
        ok(tx.commit().await, "commit");
        assert_eq!(alerts.len(), expected, "{alerts:?}");
        if let Some(alert) = alerts.first() {
            assert_eq!((alert.kind, alert.item.as_str()), ("steps.unfinished", RUN));
        }
    }
    let view = ok(store.step_run_get(RUN).await, "get").unwrap_or_else(|| panic!("no record"));
    assert_eq!(view.alerted_at, Some(later));
}

/// A run taken and its first step recorded sent inside one transaction: rolled back, neither
/// exists (the run is taken afresh, at generation 1); committed, both do, as if recorded apart.
pub async fn a_run_taken_with_its_first_step_commits_or_rolls_back_with_it(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = t0();
    let mut tx = ok(store.begin().await, "begin");
    let grant = ok(store.step_run_acquire_in(tx.as_mut(), &start(now, 60)).await, "acquire in");
    let first = generation(&grant);
    assert!(ok(store.step_sent_in(tx.as_mut(), &sent(first, 0, "d-1.0", now)).await, "sent in"));
    ok(tx.rollback().await, "rollback");
    assert!(ok(store.step_run_get(RUN).await, "get").is_none(), "a rolled-back run was kept");
    let mut tx = ok(store.begin().await, "begin");
    let grant = ok(store.step_run_acquire_in(tx.as_mut(), &start(now, 60)).await, "acquire in");
    let again = generation(&grant);
    assert_eq!(again, first, "taken afresh");
    assert!(ok(store.step_sent_in(tx.as_mut(), &sent(again, 0, "d-1.0", now)).await, "sent in"));
    ok(tx.commit().await, "commit");
    let view = ok(store.step_run_get(RUN).await, "get").unwrap_or_else(|| panic!("no record"));
    assert_eq!(view.runner_generation, again);
    assert_eq!(view.steps.len(), 1, "{:?}", view.steps);
    // Held now: a second runner is refused until the lease ends.
    let later = now + Duration::seconds(1);
    assert!(matches!(acquire(store.as_ref(), later).await, RunGrant::Held { .. }), "not held");
}
