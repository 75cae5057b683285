-- Jadpo system tables, SQLite v16: nothing to change. PostgreSQL's v16 makes its audit trail
-- hold against the runtime's own database role; SQLite has no roles (whoever can write the file
-- can rewrite it), so this version exists to keep the two ledgers' versions alike.
SELECT 1;
