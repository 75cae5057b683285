-- Jadpo system tables, PostgreSQL v15: step records, for handlers that make changing calls.
-- Immutable once released: add a new version instead of editing this file.
--
-- jadpo_step_records: one row per run of an action or subscriber that made a changing call, by
-- the run's key (a subscriber's delivery id; an action's caller and Idempotency-Key, digested):
-- the handler's name, the build that first ran it, the step shape (the JSON list of operations
-- the run made, in order), when it first started, the runner generation holding it and until
-- when (a runner that lost it can record no step and commit nothing), whether it diverged (a
-- retry asked a recorded step for another request) and why, when it finished (committed with the
-- handler's writes), the mode ('recorded': fingerprints and sealed answers; 'dispatch': a single
-- keyed call, dispatch details only) and when the alert on an unfinished record was raised.
CREATE TABLE jadpo_step_records (
    run_key            TEXT PRIMARY KEY,
    action             TEXT NOT NULL,
    build              TEXT NOT NULL,
    step_shape         TEXT NOT NULL,
    mode               TEXT NOT NULL CHECK (mode IN ('recorded', 'dispatch')),
    first_started_at   TIMESTAMPTZ NOT NULL,
    runner_generation  BIGINT NOT NULL,
    lease_expires_at   TIMESTAMPTZ NOT NULL,
    diverged           BOOLEAN NOT NULL DEFAULT FALSE,
    divergence         TEXT,
    finished_at        TIMESTAMPTZ,
    alerted_at         TIMESTAMPTZ
);
CREATE INDEX jadpo_step_records_finished ON jadpo_step_records (finished_at)
    WHERE finished_at IS NOT NULL;
CREATE INDEX jadpo_step_records_unfinished ON jadpo_step_records (first_started_at)
    WHERE finished_at IS NULL;

-- jadpo_steps: one row per changing call of a run, by its place in the run (0, 1, ...): its
-- operation (connection and path), the fingerprint of its request (SHA-256 of the canonical
-- request; none in 'dispatch' mode), the idempotency key it was sent with, when it was first
-- and last sent and by which runner generation, and once answered, when, with the answer sealed
-- (AES-256-GCM, nonce first) under the key `sealing_key_id` names (none in 'dispatch' mode).
CREATE TABLE jadpo_steps (
    run_key              TEXT NOT NULL,
    step_no              INTEGER NOT NULL,
    operation            TEXT NOT NULL,
    request_fingerprint  TEXT,
    idempotency_key      TEXT NOT NULL,
    first_sent_at        TIMESTAMPTZ NOT NULL,
    sent_at              TIMESTAMPTZ NOT NULL,
    runner_generation    BIGINT NOT NULL,
    answered_at          TIMESTAMPTZ,
    sealed_answer        BYTEA,
    sealing_key_id       TEXT,
    PRIMARY KEY (run_key, step_no)
);
