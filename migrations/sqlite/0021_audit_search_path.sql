-- Jadpo system tables, SQLite v21: nothing to change. PostgreSQL's v21 fixes the search path of
-- its audit functions, which run as their owner; SQLite has no roles nor functions in the
-- database, so this version exists to keep the two ledgers' versions alike.
SELECT 1;
