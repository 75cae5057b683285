-- Jadpo system tables, PostgreSQL v2: when each workflow command was put on the queue, so the
-- relay can send commands that were never sent or were lost, as it does deliveries. A table of
-- its own keeps the specification's outbox_commands exactly as the spec gives it.
CREATE TABLE jadpo_command_dispatch (
    command_id  TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL,
    enqueued_at TIMESTAMPTZ NOT NULL
);
