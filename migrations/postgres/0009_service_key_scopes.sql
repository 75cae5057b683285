-- Jadpo system tables, PostgreSQL v9: what each service key may do.
-- Immutable once released: add a new version instead of editing this file.
--
-- Scopes separated by spaces: '*' (everything), 'actions', 'action:<name>', 'runs', 'sessions'.
-- Keys issued before scopes existed keep '*', so they work as before until rotated.
ALTER TABLE jadpo_service_keys ADD COLUMN IF NOT EXISTS scopes TEXT NOT NULL DEFAULT '*';
