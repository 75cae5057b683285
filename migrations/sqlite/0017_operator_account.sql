-- Jadpo system tables, v17: the operating-system account (user@host) an operator's verb ran
-- from, beside the name they gave and the database role. NULL for rows written before it was
-- recorded, and for changes the runtime itself makes.
-- Immutable once released: add a new version instead of editing this file.
ALTER TABLE jadpo_operator_actions ADD COLUMN os_account TEXT;
ALTER TABLE jadpo_flag_changes ADD COLUMN os_account TEXT;
