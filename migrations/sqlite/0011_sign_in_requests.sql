-- Jadpo system tables, SQLite v11: sign-in requests, for magic links and one-time codes by
-- email (times in Unix epoch milliseconds).
-- Immutable once released: add a new version instead of editing this file.
--
-- One row per address, by its digest (the table holds no address): the latest request's nonce
-- (random; the code's salt), the verifiers of the link and code its mail carried (NULL until the
-- mail is made, after use and after lock-out), when they stop working and were used, and the
-- counts the limits read: sends in the current hour's window, wrong codes for this request.
-- Housekeeping deletes a row once its window and its link are both over.
CREATE TABLE jadpo_sign_in_requests (
    address_digest    TEXT NOT NULL PRIMARY KEY,
    nonce             TEXT NOT NULL,
    window_started_at INTEGER NOT NULL,
    sends_in_window   INTEGER NOT NULL,
    link_verifier     TEXT,
    code_verifier     TEXT,
    wrong_codes       INTEGER NOT NULL,
    requested_at      INTEGER NOT NULL,
    expires_at        INTEGER NOT NULL,
    used_at           INTEGER
);
CREATE INDEX jadpo_sign_in_requests_expires ON jadpo_sign_in_requests (expires_at);
