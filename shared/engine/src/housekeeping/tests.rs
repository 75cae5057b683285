use chrono::{DateTime, Utc};

use super::*;

#[test]
fn cutoffs_follow_each_class_retention() {
    let now: DateTime<Utc> = DateTime::parse_from_rfc3339("2026-02-01T00:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|e| panic!("{e}"));
    let s = HousekeepingSettings::default();
    assert_eq!(s.cutoff(RecordClass::IdempotencyKeys, now), now);
    assert_eq!(s.cutoff(RecordClass::HandledDeliveries, now), now - chrono::Duration::days(14));
    assert_eq!(s.cutoff(RecordClass::FinishedDeliveries, now), now - chrono::Duration::days(7));
    assert_eq!(s.cutoff(RecordClass::OutboxRows, now), now - chrono::Duration::days(7));
    assert_eq!(s.cutoff(RecordClass::DeadDeliveries, now), now - chrono::Duration::days(30));
    assert_eq!(s.cutoff(RecordClass::ScheduleRuns, now), now - chrono::Duration::days(30));
    assert_eq!(s.cutoff(RecordClass::PasskeyChallenges, now), now, "a ceremony past its end goes");
    let names: Vec<_> = RecordClass::ALL.iter().map(|c| c.as_str()).collect();
    let position = |class: &str| {
        let at = names.iter().position(|n| *n == class);
        at.unwrap_or_else(|| panic!("no class {class} in {names:?}"))
    };
    let (outbox, finished) = (position("outbox_rows"), position("finished_deliveries"));
    assert!(finished < outbox, "deliveries go before their outbox rows: {names:?}");
}
