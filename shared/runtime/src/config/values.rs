//! Reading the engine's numbers and durations from the environment, each checked against its
//! range so that a bad value stops the start naming its variable, and the groups of them
//! (housekeeping's retentions, the upload quota) that `Config::from_vars` reads together.

use std::time::Duration;

use jadpo_engine::housekeeping::HousekeepingSettings;

use super::ConfigError;

/// Milliseconds from 0 to 60,000 in `variable`, else `default`.
pub(super) fn up_to_a_minute(
    env: &dyn Fn(&str) -> Option<String>,
    variable: &str,
    default: Duration,
) -> Result<Duration, ConfigError> {
    let default = usize::try_from(default.as_millis()).unwrap_or(60_000);
    Ok(Duration::from_millis(number(env, variable, default, 0, 60_000)? as u64))
}

/// How many files, and bytes, each user may keep uploaded.
pub(super) fn upload_quota(
    env: &dyn Fn(&str) -> Option<String>,
    d: jadpo_core::model::file_field::Quota,
) -> Result<jadpo_core::model::file_field::Quota, ConfigError> {
    let most = |variable: &str, default: u64, max: usize| {
        number(env, variable, usize::try_from(default).unwrap_or(max), 1, max).map(|n| n as u64)
    };
    Ok(jadpo_core::model::file_field::Quota {
        files: most("JADPO_UPLOAD_QUOTA_FILES", d.files, 100_000_000)?,
        bytes: most("JADPO_UPLOAD_QUOTA_BYTES", d.bytes, 1 << 50)?,
    })
}

/// Retention per record class and the housekeeping pass's limits.
pub(super) fn housekeeping(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<HousekeepingSettings, ConfigError> {
    let d = HousekeepingSettings::default();
    let batch = number(env, "JADPO_HOUSEKEEPING_BATCH", d.batch_size as usize, 1, 100_000)?;
    Ok(HousekeepingSettings {
        lease_ttl: seconds(env, "JADPO_HOUSEKEEPING_LEASE_SECS", d.lease_ttl.as_secs())?,
        batch_size: u32::try_from(batch).unwrap_or(d.batch_size),
        handled_retention: seconds(
            env,
            "JADPO_RETAIN_HANDLED_SECS",
            d.handled_retention.as_secs(),
        )?,
        finished_retention: seconds(
            env,
            "JADPO_RETAIN_FINISHED_SECS",
            d.finished_retention.as_secs(),
        )?,
        dead_retention: seconds(env, "JADPO_RETAIN_DEAD_SECS", d.dead_retention.as_secs())?,
        schedule_run_retention: seconds(
            env,
            "JADPO_RETAIN_SCHEDULE_RUNS_SECS",
            d.schedule_run_retention.as_secs(),
        )?,
        overdue_after: seconds(env, "JADPO_OVERDUE_AFTER_SECS", d.overdue_after.as_secs())?,
        step_record_retention: seconds(
            env,
            "JADPO_RETAIN_STEP_RECORDS_SECS",
            d.step_record_retention.as_secs(),
        )?,
        unfinished_steps_after: seconds(
            env,
            "JADPO_UNFINISHED_STEPS_AFTER_SECS",
            d.unfinished_steps_after.as_secs(),
        )?,
        file_grace: seconds(env, "JADPO_FILE_GRACE_SECS", d.file_grace.as_secs())?,
        upload_grace: seconds(env, "JADPO_UPLOAD_GRACE_SECS", d.upload_grace.as_secs())?,
        orphan_window: seconds(env, "JADPO_ORPHAN_WINDOW_SECS", d.orphan_window.as_secs())?,
        file_tombstone_retention: seconds(
            env,
            "JADPO_RETAIN_FILE_TOMBSTONES_SECS",
            d.file_tombstone_retention.as_secs(),
        )?,
        ..d
    })
}

/// `d` in whole milliseconds, for a default given in milliseconds.
pub(super) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(super) fn number(
    env: &dyn Fn(&str) -> Option<String>,
    variable: &str,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, ConfigError> {
    let Some(value) = env(variable) else {
        return Ok(default);
    };
    match value.trim().parse::<usize>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ConfigError::BadNumber {
            variable: variable.to_owned(),
            expected: format!("a whole number from {min} to {max}"),
            value,
        }),
    }
}

pub(super) fn seconds(
    env: &dyn Fn(&str) -> Option<String>,
    variable: &str,
    default: u64,
) -> Result<Duration, ConfigError> {
    duration(
        env,
        variable,
        default,
        Duration::from_secs,
        "a positive number of seconds, at most 100 years",
    )
}

pub(super) fn millis(
    env: &dyn Fn(&str) -> Option<String>,
    variable: &str,
    default: u64,
) -> Result<Duration, ConfigError> {
    duration(
        env,
        variable,
        default,
        Duration::from_millis,
        "a positive number of milliseconds, at most 100 years",
    )
}

pub(super) fn duration(
    env: &dyn Fn(&str) -> Option<String>,
    variable: &str,
    default: u64,
    unit: fn(u64) -> Duration,
    expected: &'static str,
) -> Result<Duration, ConfigError> {
    let Some(value) = env(variable) else { return Ok(unit(default)) };
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 && unit(n) <= jadpo_core::clock::LONGEST_SETTING => Ok(unit(n)),
        _ => Err(ConfigError::BadNumber {
            variable: variable.to_owned(),
            expected: expected.to_owned(),
            value,
        }),
    }
}
