use chrono::{DateTime, TimeZone, Utc};

use super::*;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn every(secs: u64) -> When {
    When::every(std::time::Duration::from_secs(secs)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn rates_are_aligned_to_the_epoch() {
    let w = every(60);
    assert_eq!(w.next_after(at("2026-01-01T10:00:30Z")).ok(), Some(at("2026-01-01T10:01:00Z")));
    assert_eq!(w.next_after(at("2026-01-01T10:01:00Z")).ok(), Some(at("2026-01-01T10:02:00Z")));
    assert_eq!(
        w.latest_at_or_before(at("2026-01-01T10:01:00Z")).ok().flatten(),
        Some(at("2026-01-01T10:01:00Z"))
    );
    assert_eq!(
        w.latest_before(at("2026-01-01T10:01:00Z")).ok().flatten(),
        Some(at("2026-01-01T10:00:00Z"))
    );
    assert_eq!(w.describe(), "every 60s");
}

#[test]
fn cron_follows_the_time_zone_across_daylight_saving() {
    let w = When::cron("0 9 * * *", "Europe/Paris").unwrap_or_else(|e| panic!("{e}"));
    // 09:00 in Paris is 08:00 UTC in winter and 07:00 UTC in summer.
    assert_eq!(w.next_after(at("2026-03-28T12:00:00Z")).ok(), Some(at("2026-03-29T07:00:00Z")));
    assert_eq!(w.next_after(at("2026-01-10T12:00:00Z")).ok(), Some(at("2026-01-11T08:00:00Z")));
    assert_eq!(
        w.latest_at_or_before(at("2026-01-11T08:30:00Z")).ok().flatten(),
        Some(at("2026-01-11T08:00:00Z"))
    );
    assert_eq!(w.describe(), "cron \"0 9 * * *\" in Europe/Paris");
}

#[test]
fn cron_in_a_skipped_or_repeated_hour_is_pinned() {
    // Paris: 2026-03-29 02:00 -> 03:00 (02:30 never happens); 2026-10-25 03:00 -> 02:00 (02:30
    // happens twice).
    let w = When::cron("30 2 * * *", "Europe/Paris").unwrap_or_else(|e| panic!("{e}"));
    let next = |t: &str| w.next_after(at(t)).ok().map(|n| n.to_rfc3339());
    let utc = |t: &str| Some(at(t).to_rfc3339());
    // The skipped 02:30 runs at 03:00 CEST, the first wall-clock time after the gap.
    assert_eq!(next("2026-03-28T12:00:00Z"), utc("2026-03-29T01:00:00Z"));
    assert_eq!(
        w.latest_before(at("2026-03-30T00:00:00Z")).ok().flatten().map(|t| t.to_rfc3339()),
        utc("2026-03-29T01:00:00Z")
    );
    // The repeated 02:30 runs once, at its first occurrence (CEST), then the next day.
    assert_eq!(next("2026-10-24T12:00:00Z"), utc("2026-10-25T00:30:00Z"));
    assert_eq!(next("2026-10-25T00:30:00Z"), utc("2026-10-26T01:30:00Z"));
    assert_eq!(
        w.latest_at_or_before(at("2026-10-25T01:30:00Z")).ok().flatten().map(|t| t.to_rfc3339()),
        utc("2026-10-25T00:30:00Z")
    );
}

#[test]
fn zones_are_iana_names_spelled_exactly() {
    let described = When::cron("0 9 * * *", "Etc/UTC").map(|w| w.describe());
    assert_eq!(described.ok().as_deref(), Some("cron \"0 9 * * *\" in Etc/UTC"));
    let utc = When::cron("0 9 * * *", "UTC").map(|w| w.describe());
    assert_eq!(utc.ok().as_deref(), Some("cron \"0 9 * * *\" in UTC"));
    for zone in ["europe/paris", "Europe/Paris ", "", "Paris", "+02:00"] {
        let refused = When::cron("0 9 * * *", zone);
        assert!(
            matches!(&refused, Err(ScheduleError::BadZone { zone: z, .. }) if z == zone),
            "{zone:?}: {refused:?}"
        );
    }
}

#[test]
fn cron_beyond_the_supported_years_is_a_clear_error() {
    let w = When::cron("0 9 * * *", "UTC").unwrap_or_else(|e| panic!("{e}"));
    let err = w.next_after(DateTime::<Utc>::MAX_UTC).err().map(|e| e.to_string());
    assert!(err.as_deref().is_some_and(|e| e.contains("-9999 to 9999")), "{err:?}");
    assert_eq!(w.latest_before(DateTime::<Utc>::MIN_UTC).ok(), Some(None));
}

#[test]
fn bad_timing_is_refused_naming_the_schedule() {
    let bad = Schedule::cron("nightly", "61 * * * *", "UTC", "e").compile();
    assert!(
        matches!(&bad, Err(ScheduleError::BadCron { schedule, .. }) if schedule.contains("nightly")),
        "{bad:?}"
    );
    let zone = Schedule::cron("nightly", "0 * * * *", "Mars/Olympus", "e").compile();
    assert!(
        matches!(&zone, Err(ScheduleError::BadZone { zone, .. }) if zone == "Mars/Olympus"),
        "{zone:?}"
    );
    let message = zone.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("IANA") && message.contains("nightly"), "{message}");
    for period in [std::time::Duration::ZERO, std::time::Duration::from_millis(1500)] {
        assert!(matches!(When::every(period), Err(ScheduleError::BadRate { .. })));
    }
}

#[test]
fn nothing_is_due_before_the_next_due_time() {
    let due = due_ticks(&every(60), at("2026-01-01T10:01:00Z"), at("2026-01-01T10:00:59Z"), 10);
    assert_eq!(due, Ok(None));
}

#[test]
fn one_due_tick_runs() {
    let due = due_ticks(&every(60), at("2026-01-01T10:01:00Z"), at("2026-01-01T10:01:02Z"), 10)
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("due"));
    assert_eq!(due.ticks, vec![at("2026-01-01T10:01:00Z")]);
    assert_eq!(due.next_due, at("2026-01-01T10:02:00Z"));
    let d = decide(&due, 0, false, None);
    assert_eq!(d.runs, vec![(at("2026-01-01T10:01:00Z"), Trigger::Due)]);
    assert!(d.skipped.is_empty());
}

#[test]
fn missed_ticks_run_the_latest_and_skip_the_others_with_reasons() {
    let due = due_ticks(&every(60), at("2026-01-01T10:01:00Z"), at("2026-01-01T10:05:30Z"), 10)
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("due"));
    assert_eq!(due.ticks.len(), 5);
    let d = decide(&due, 0, false, None);
    assert_eq!(d.runs, vec![(at("2026-01-01T10:05:00Z"), Trigger::Due)]);
    assert_eq!(d.skipped.len(), 4);
    assert!(d.skipped.iter().all(|(_, why)| why.starts_with("missed")));
    // Catch-up 2: the two missed ticks before the latest run too.
    let d = decide(&due, 2, false, None);
    let run_ticks: Vec<_> = d.runs.iter().map(|(t, k)| (t.to_rfc3339(), *k)).collect();
    assert_eq!(
        run_ticks,
        vec![
            (at("2026-01-01T10:03:00Z").to_rfc3339(), Trigger::CatchUp),
            (at("2026-01-01T10:04:00Z").to_rfc3339(), Trigger::CatchUp),
            (at("2026-01-01T10:05:00Z").to_rfc3339(), Trigger::Due),
        ]
    );
    assert_eq!(d.skipped.len(), 2);
}

#[test]
fn a_long_gap_is_bounded_and_summarized() {
    let due = due_ticks(&every(1), at("2026-01-01T00:00:00Z"), at("2026-01-08T00:00:00Z"), 5)
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("due"));
    assert_eq!(due.ticks.len(), 4);
    assert_eq!(due.unlisted_from, Some(at("2026-01-01T00:00:00Z")));
    assert_eq!(due.ticks.last(), Some(&at("2026-01-08T00:00:00Z")));
    let d = decide(&due, 0, false, None);
    assert_eq!(d.runs.len(), 1);
    assert_eq!(d.skipped.len(), 4);
    assert!(d.skipped[0].1.contains("not recorded one by one"), "{}", d.skipped[0].1);
}

#[test]
fn paused_and_overlapping_ticks_are_skipped_with_their_reason() {
    let due = due_ticks(&every(60), at("2026-01-01T10:01:00Z"), at("2026-01-01T10:02:10Z"), 10)
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("due"));
    let paused = decide(&due, 0, true, None);
    assert!(paused.runs.is_empty());
    assert!(paused.skipped.iter().all(|(_, why)| why.contains("paused")));
    let overlap = decide(&due, 0, false, Some("the previous run r1 has 2 unfinished deliveries"));
    assert!(overlap.runs.is_empty());
    assert_eq!(
        overlap.skipped.last().map(|(_, w)| w.as_str()),
        Some("overlap: the previous run r1 has 2 unfinished deliveries")
    );
}

#[test]
fn a_changed_expression_takes_effect_after_the_stored_due_time() {
    // Stored next due 10:00 (an hourly schedule); now a daily one. 10:00 still fires; the next
    // due time comes from the new expression.
    let daily = When::cron("0 0 * * *", "UTC").unwrap_or_else(|e| panic!("{e}"));
    let due = due_ticks(&daily, at("2026-01-01T10:00:00Z"), at("2026-01-01T10:00:05Z"), 10)
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("due"));
    assert_eq!(due.ticks, vec![at("2026-01-01T10:00:00Z")]);
    assert_eq!(due.next_due, at("2026-01-02T00:00:00Z"));
}

#[test]
fn tick_ids_are_deterministic() {
    let t = Utc.with_ymd_and_hms(2026, 1, 1, 10, 0, 0).single().unwrap_or_else(|| panic!("time"));
    assert_eq!(tick_id("s", t), "s@2026-01-01T10:00:00.000Z");
    assert_eq!(tick_id("s", t), tick_id("s", t));
    assert_ne!(tick_id("s", t), tick_id("u", t));
}

mod arbitrary {
    //! Arbitrary cron expressions and time zones (property-based): parsing never panics, and an
    //! accepted schedule's next tick is after the time asked about and its latest tick at or
    //! before it is not after it, in any zone, across DST changes and the calendar's ends.

    use proptest::prelude::*;

    use super::super::When;
    use chrono::{DateTime, TimeZone, Utc};

    fn field(max: u32) -> impl Strategy<Value = String> {
        prop_oneof![
            Just("*".to_owned()),
            (0..=max).prop_map(|n| n.to_string()),
            (0..=max, 0..=max).prop_map(|(a, b)| format!("{a}-{b}")),
            (1..=max.max(1)).prop_map(|n| format!("*/{n}")),
            prop::collection::vec(0..=max, 1..4).prop_map(|v| v
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")),
        ]
    }

    fn cron_like() -> impl Strategy<Value = String> {
        prop_oneof![
            (field(59), field(23), field(31), field(12), field(7))
                .prop_map(|(m, h, d, mo, w)| format!("{m} {h} {d} {mo} {w}")),
            ".{0,40}",
            "[0-9*/,\\- ]{0,30}",
        ]
    }

    fn zone() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("UTC".to_owned()),
            Just("Europe/Paris".to_owned()),
            Just("America/New_York".to_owned()),
            Just("Australia/Lord_Howe".to_owned()),
            Just("Asia/Kathmandu".to_owned()),
            "[A-Za-z/_+-]{0,30}",
        ]
    }

    fn moment() -> impl Strategy<Value = DateTime<Utc>> {
        // From 1970 to 9999, the span a schedule's times are kept in.
        (0_i64..253_402_300_799).prop_map(|s| Utc.timestamp_opt(s, 0).single().unwrap_or_default())
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(2_000),
            ..ProptestConfig::default()
        })]

        #[test]
        fn schedules_parse_or_refuse_and_their_ticks_are_ordered(
            expression in cron_like(), zone in zone(), t in moment()
        ) {
            let Ok(when) = When::cron(&expression, &zone) else { return Ok(()) };
            if let Ok(next) = when.next_after(t) {
                prop_assert!(next > t, "{expression:?} in {zone}: next {next} after {t}");
            }
            if let Ok(Some(latest)) = when.latest_at_or_before(t) {
                prop_assert!(latest <= t, "{expression:?} in {zone}: latest {latest} at or before {t}");
            }
        }
    }
}
