-- Jadpo system tables, PostgreSQL v25: sign-in mails and wrong codes counted per source address.
-- Immutable once released: add a new version instead of editing this file.
--
-- One row per client address, by its digest (the table holds no address): when its hour's
-- window started, the sign-in mails it asked for and the wrong codes it sent in that window.
-- A source past either limit is refused (429) until its window ends, and its refused tries
-- count against no address: one source cannot lock a person out of their own sign-in by
-- sending their address wrong codes. Housekeeping deletes a row once its window is over.
CREATE TABLE jadpo_sign_in_sources (
    source_digest     TEXT PRIMARY KEY,
    window_started_at TIMESTAMPTZ NOT NULL,
    sends_in_window   INTEGER NOT NULL,
    wrong_codes       INTEGER NOT NULL
);
CREATE INDEX jadpo_sign_in_sources_window ON jadpo_sign_in_sources (window_started_at);
