DROP INDEX api_credentials_by_application;
CREATE UNIQUE INDEX api_credentials_current ON api_credentials (application_id, environment)
    WHERE revoked_at IS NULL;
