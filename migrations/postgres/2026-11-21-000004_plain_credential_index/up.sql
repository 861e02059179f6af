-- A partial index makes SQLite re-plan every statement on the table after each rebind, which
-- cost a third of every signed-request key lookup (docs/performance.md). One current key per
-- application and environment is kept by the rotation transaction, which locks the application.
DROP INDEX api_credentials_current;
CREATE INDEX api_credentials_by_application ON api_credentials (application_id, environment);
