-- Jadpo system tables, SQLite v27: webhook receipts (times in Unix epoch milliseconds).
-- Immutable once released: add a new version instead of editing this file.
--
-- One row per event a declared webhook source received, by the source and the event's key (the
-- key taken from signed material only: the signed id, the event id in the signed body, else the
-- body's SHA-256), written in the transaction of the action the event fed, with that action's
-- writes and events: a second request with the same key finds the row and changes nothing. It
-- keeps the receipt's id, the action and its request id, when it was received and signed, the
-- headers as a JSON object without credential headers, and the body exactly as received.
-- Housekeeping deletes a row once the source's retention (past the provider's redelivery
-- horizon, 30 days by default) has passed.
CREATE TABLE jadpo_webhook_receipts (
    source       TEXT NOT NULL,
    event_key    TEXT NOT NULL,
    id           TEXT NOT NULL UNIQUE,
    action       TEXT NOT NULL,
    request_id   TEXT NOT NULL,
    received_at  INTEGER NOT NULL,
    signed_at    INTEGER,
    headers      TEXT NOT NULL,
    body         BLOB NOT NULL,
    PRIMARY KEY (source, event_key)
);
CREATE INDEX jadpo_webhook_receipts_received ON jadpo_webhook_receipts (source, received_at);
