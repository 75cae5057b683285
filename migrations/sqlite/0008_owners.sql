-- Jadpo system tables, SQLite v8: who owns each workflow run and Session.
-- Immutable once released: add a new version instead of editing this file.
--
-- A run or Session belongs to the principal that created it, written `service:<name>` or
-- `user:<id>`; every HTTP route answers 404 to any other principal. Rows from before this
-- migration have no owner and are reachable by no principal over HTTP (operators still reach
-- them with `jadpo export` and `jadpo verify`).
ALTER TABLE workflow_executions ADD COLUMN owner TEXT;
ALTER TABLE sessions ADD COLUMN owner TEXT;
