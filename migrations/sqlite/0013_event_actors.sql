-- Jadpo system tables, SQLite v13: who made each workflow event.
-- Immutable once released: add a new version instead of editing this file.
--
-- Each event a principal's request made (a run's start, an event posted to it, its
-- cancellation) records that principal, written `service:<name>` or `user:<id>`. Events the
-- runtime makes itself (a step's completion) and events from before this migration have none.
ALTER TABLE workflow_events ADD COLUMN actor TEXT;
