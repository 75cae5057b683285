use chrono::{DateTime, Utc};

use super::*;

#[test]
fn cutoffs_follow_each_class_retention() {
    let now: DateTime<Utc> = DateTime::parse_from_rfc3339("2026-02-01T00:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|e| panic!("{e}"));
    let s = HousekeepingSettings::default();
    assert_eq!(RecordClass::IdempotencyKeys.cutoff(&s, now), now);
    assert_eq!(RecordClass::HandledDeliveries.cutoff(&s, now), now - chrono::Duration::days(14));
    assert_eq!(RecordClass::FinishedDeliveries.cutoff(&s, now), now - chrono::Duration::days(7));
    assert_eq!(RecordClass::OutboxRows.cutoff(&s, now), now - chrono::Duration::days(7));
    assert_eq!(RecordClass::DeadDeliveries.cutoff(&s, now), now - chrono::Duration::days(30));
    assert_eq!(RecordClass::ScheduleRuns.cutoff(&s, now), now - chrono::Duration::days(30));
    let names: Vec<_> = RecordClass::ALL.iter().map(|c| c.as_str()).collect();
    let outbox = names.iter().position(|n| *n == "outbox_rows");
    let finished = names.iter().position(|n| *n == "finished_deliveries");
    assert!(finished < outbox, "deliveries go before their outbox rows: {names:?}");
}
