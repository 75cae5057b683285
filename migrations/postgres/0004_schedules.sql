-- Jadpo system tables, PostgreSQL v4: schedules, their runs and skipped ticks, what operators
-- did, and when an alert was raised for a dead delivery.
-- Immutable once released: add a new version instead of editing this file.

-- Each declared schedule: when it is next due, its lease (owner, expiry, generation: the lease
-- primitive shared by every leased row) and its last tick (a time it was due to run).
CREATE TABLE jadpo_schedules (
    name                    TEXT PRIMARY KEY,
    expression              TEXT NOT NULL,
    event_type              TEXT NOT NULL,
    next_due_at             TIMESTAMPTZ NOT NULL,
    last_tick_at            TIMESTAMPTZ,
    last_run_id             TEXT,
    paused_at               TIMESTAMPTZ,
    removed_at              TIMESTAMPTZ,
    overdue_alert_raised_at TIMESTAMPTZ,
    lease_owner             TEXT,
    lease_expires_at        TIMESTAMPTZ,
    lease_generation        BIGINT NOT NULL DEFAULT 0,
    created_at              TIMESTAMPTZ NOT NULL,
    updated_at              TIMESTAMPTZ NOT NULL
);
CREATE INDEX jadpo_schedules_due_idx ON jadpo_schedules (next_due_at);

-- Each run and each skipped tick. A tick's id is derived from the schedule and the tick's time,
-- so two tick invocations recording the same tick collide here and only one run is recorded.
CREATE TABLE jadpo_schedule_runs (
    id          TEXT PRIMARY KEY,
    schedule    TEXT NOT NULL REFERENCES jadpo_schedules (name) ON DELETE CASCADE,
    tick_at     TIMESTAMPTZ NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('run', 'skipped')),
    trigger     TEXT NOT NULL CHECK (trigger IN ('due', 'catch_up', 'operator')),
    reason      TEXT,
    outbox_id   TEXT,
    recorded_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX jadpo_schedule_runs_schedule_idx ON jadpo_schedule_runs (schedule, tick_at);
CREATE INDEX jadpo_schedule_runs_recorded_at_idx ON jadpo_schedule_runs (recorded_at);

-- What an operator did: when, which action, the item and its state then (JSON), the operator's
-- name and the database role in use.
CREATE TABLE jadpo_operator_actions (
    id         TEXT PRIMARY KEY,
    acted_at   TIMESTAMPTZ NOT NULL,
    action     TEXT NOT NULL,
    item_kind  TEXT NOT NULL,
    item       TEXT NOT NULL,
    item_state TEXT NOT NULL,
    operator   TEXT NOT NULL,
    db_role    TEXT NOT NULL,
    detail     TEXT
);
CREATE INDEX jadpo_operator_actions_item_idx ON jadpo_operator_actions (item_kind, item, acted_at);

-- When housekeeping raised the alert for a dead delivery, so it is raised once.
ALTER TABLE jadpo_deliveries ADD COLUMN alert_raised_at TIMESTAMPTZ;
-- Finished deliveries are found by age for retention.
CREATE INDEX jadpo_deliveries_finished_idx ON jadpo_deliveries (finished_at)
    WHERE finished_at IS NOT NULL;
-- Outbox rows are found by age for retention.
CREATE INDEX jadpo_outbox_created_at_idx ON jadpo_outbox (created_at);
