-- SQLite only (WITHOUT ROWID tables for grants and sessions, see the SQLite migration): a
-- PostgreSQL primary key lookup is already one index descent and one heap fetch.
SELECT 1;
