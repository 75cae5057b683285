-- Jadpo system tables, v20: the operator's pages over deliveries, read by keyset. Newest first
-- among all deliveries, and among those of one status (the console's dead deliveries), each
-- page starting where the last ended: no page sorts or skips rows, however many there are.
-- Immutable once released: add a new version instead of editing this file.
CREATE INDEX jadpo_deliveries_created_idx ON jadpo_deliveries (created_at, id);
CREATE INDEX jadpo_deliveries_status_created_idx ON jadpo_deliveries (status, created_at, id);
