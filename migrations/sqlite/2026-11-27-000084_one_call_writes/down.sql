-- PostgreSQL's one-call write functions (ADR 0034). SQLite runs the same writes in-process in
-- the writer's group commit, where a statement costs no round trip: nothing to add here.
SELECT 1;
