-- Jadpo system tables, PostgreSQL v21: the audit functions resolve names only in their own
-- schema, temporary objects last.
-- Immutable once released: add a new version instead of editing this file.
--
-- The trigger and retention functions run as their owner (v16) and name jadpo_audit without a
-- schema. Their search path was the one current when they were made, which searches a session's
-- temporary schema first: a role that may create temporary tables could make its own
-- jadpo_audit, and the trigger would write that session's changes there, where they vanish with
-- it. Here each function's search path is the schema it lives in, then pg_temp, named last so
-- that it is searched last (PostgreSQL never looks for functions there).
SELECT set_config('search_path', quote_ident(current_schema()) || ', pg_temp', true);
ALTER FUNCTION jadpo_audit_row() SET search_path FROM CURRENT;
ALTER FUNCTION jadpo_audit_expire(text, timestamptz, bigint) SET search_path FROM CURRENT;
ALTER FUNCTION jadpo_audit_trusted() SET search_path FROM CURRENT;
