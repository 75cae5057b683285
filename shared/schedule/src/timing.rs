//! When a schedule is due: a cron expression evaluated in an IANA time zone (so "09:00 in
//! Europe/Paris" follows daylight saving time), or a fixed rate aligned to the Unix epoch (so
//! every process computes the same ticks without sharing anything).

use chrono::{DateTime, TimeZone as _, Utc};
use croner::Cron;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use std::str::FromStr;

/// Why a schedule's timing was refused, or could not be evaluated.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ScheduleError {
    /// The cron expression does not parse.
    #[error("{schedule}cron expression {expression:?} is invalid: {why}")]
    BadCron {
        /// `schedule "name": ` or empty.
        schedule: String,
        expression: String,
        /// The parser's reason.
        why: String,
    },
    /// The time zone is not an IANA zone name.
    #[error(
        "{schedule}time zone {zone:?} is not an IANA time zone name (e.g. \"Europe/Paris\", \"UTC\")"
    )]
    BadZone {
        /// `schedule "name": ` or empty.
        schedule: String,
        zone: String,
    },
    /// A rate under one second or not in whole seconds.
    #[error("{schedule}a rate must be a whole number of seconds, at least 1, got {period:?}")]
    BadRate {
        /// `schedule "name": ` or empty.
        schedule: String,
        period: std::time::Duration,
    },
    /// The expression never matches again (e.g. a date in the past).
    #[error("cron expression {expression:?} has no time after {after}: {why}")]
    NoNextTime {
        expression: String,
        /// The time searched from.
        after: DateTime<Utc>,
        /// The evaluator's reason.
        why: String,
    },
}

impl ScheduleError {
    /// The same error naming the schedule.
    pub(crate) fn for_schedule(self, name: &str) -> Self {
        let prefix = format!("schedule {name:?}: ");
        match self {
            Self::BadCron { expression, why, .. } => {
                Self::BadCron { schedule: prefix, expression, why }
            }
            Self::BadZone { zone, .. } => Self::BadZone { schedule: prefix, zone },
            Self::BadRate { period, .. } => Self::BadRate { schedule: prefix, period },
            other @ Self::NoNextTime { .. } => other,
        }
    }
}

/// When a schedule is due.
#[derive(Debug, Clone)]
pub enum When {
    /// A cron expression in a time zone.
    Cron {
        /// The expression as written.
        expression: String,
        /// The zone it is evaluated in (from the IANA database compiled into the binary).
        zone: TimeZone,
        /// The parsed expression.
        cron: Box<Cron>,
    },
    /// Every so many milliseconds, aligned to the Unix epoch.
    Every {
        /// The period in milliseconds.
        millis: i64,
    },
}

impl When {
    /// Parses a cron expression (5 fields, or 6 with seconds first) in the IANA `zone`.
    pub fn cron(expression: &str, zone: &str) -> Result<Self, ScheduleError> {
        let cron = Cron::from_str(expression).map_err(|e| ScheduleError::BadCron {
            schedule: String::new(),
            expression: expression.to_owned(),
            why: e.to_string(),
        })?;
        let zone = iana_zone(zone).ok_or_else(|| ScheduleError::BadZone {
            schedule: String::new(),
            zone: zone.to_owned(),
        })?;
        Ok(Self::Cron { expression: expression.to_owned(), zone, cron: Box::new(cron) })
    }

    /// A fixed rate of `period` (whole seconds, at least one).
    pub fn every(period: std::time::Duration) -> Result<Self, ScheduleError> {
        let bad = || ScheduleError::BadRate { schedule: String::new(), period };
        if period.as_secs() == 0 || period.subsec_nanos() != 0 {
            return Err(bad());
        }
        let millis = i64::try_from(period.as_millis()).map_err(|_| bad())?;
        Ok(Self::Every { millis })
    }

    /// The stored form, shown to operators: `cron "*/5 * * * *" in Europe/Paris`, `every 60s`.
    pub fn describe(&self) -> String {
        match self {
            Self::Cron { expression, zone, .. } => {
                format!("cron {expression:?} in {}", zone.iana_name().unwrap_or("UTC"))
            }
            Self::Every { millis } => format!("every {}s", millis / 1000),
        }
    }

    /// The first tick strictly after `t`.
    pub fn next_after(&self, t: DateTime<Utc>) -> Result<DateTime<Utc>, ScheduleError> {
        match self {
            Self::Cron { cron, zone, expression } => zoned(t, zone)
                .and_then(|z| cron.find_next_occurrence(&z, false).map_err(|e| e.to_string()))
                .and_then(|n| utc(&n))
                .map_err(|why| ScheduleError::NoNextTime {
                    expression: expression.clone(),
                    after: t,
                    why,
                }),
            Self::Every { millis } => {
                let at = (t.timestamp_millis().div_euclid(*millis) + 1) * millis;
                Ok(from_millis(at))
            }
        }
    }

    /// The last tick at or before `t`, if any.
    pub fn latest_at_or_before(
        &self,
        t: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, ScheduleError> {
        self.previous(t, true)
    }

    /// The last tick strictly before `t`, if any.
    pub fn latest_before(&self, t: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, ScheduleError> {
        self.previous(t, false)
    }

    fn previous(
        &self,
        t: DateTime<Utc>,
        inclusive: bool,
    ) -> Result<Option<DateTime<Utc>>, ScheduleError> {
        match self {
            // No earlier match is not an error here: the walk back simply ends.
            Self::Cron { cron, zone, .. } => Ok(zoned(t, zone)
                .ok()
                .and_then(|z| cron.find_previous_occurrence(&z, inclusive).ok())
                .and_then(|p| utc(&p).ok())),
            Self::Every { millis } => {
                let ms = t.timestamp_millis();
                let mut at = ms.div_euclid(*millis) * millis;
                if at == ms && !inclusive {
                    at -= millis;
                }
                Ok(Some(from_millis(at)))
            }
        }
    }
}

/// The zone named exactly `name` in the bundled IANA database. The lookup itself ignores case;
/// names are held to their exact spelling so that what is stored and shown is the IANA name.
fn iana_zone(name: &str) -> Option<TimeZone> {
    let zone = jiff::tz::db().get(name).ok()?;
    (zone.iana_name() == Some(name)).then_some(zone)
}

/// `t` on the wall clock of `zone`.
fn zoned(t: DateTime<Utc>, zone: &TimeZone) -> Result<Zoned, String> {
    let nanos = i32::try_from(t.timestamp_subsec_nanos()).unwrap_or(0);
    Timestamp::new(t.timestamp(), nanos)
        .map(|ts| ts.to_zoned(zone.clone()))
        .map_err(|_| format!("{t} is outside the years a cron schedule covers (-9999 to 9999)"))
}

/// The instant of a zoned time.
fn utc(z: &Zoned) -> Result<DateTime<Utc>, String> {
    let ts = z.timestamp();
    let nanos = u32::try_from(ts.subsec_nanosecond()).unwrap_or(0);
    Utc.timestamp_opt(ts.as_second(), nanos).single().ok_or_else(|| format!("{ts} is out of range"))
}

fn from_millis(ms: i64) -> DateTime<Utc> {
    // reason: a multiple of a period below i64::MAX milliseconds from the epoch is in range for
    // any time this runtime meets; the fallback keeps the function total.
    Utc.timestamp_millis_opt(ms).single().unwrap_or(DateTime::<Utc>::MAX_UTC)
}
