-- Jadpo system tables, SQLite v9: what each service key may do.
-- Immutable once released: add a new version instead of editing this file.
--
-- Scopes separated by spaces: '*' (everything), 'actions', 'action:<name>', 'runs', 'sessions'.
-- Keys issued before scopes existed keep '*', so they work as before until rotated.
ALTER TABLE jadpo_service_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT '*';
