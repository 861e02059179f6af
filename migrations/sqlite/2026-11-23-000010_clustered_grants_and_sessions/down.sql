CREATE TABLE oauth_grants_with_rowid (
    code_hash             TEXT PRIMARY KEY NOT NULL,
    sealed_code           TEXT NOT NULL,
    session_id            TEXT NOT NULL UNIQUE,
    application_id        TEXT NOT NULL,
    redirect_uri          TEXT NOT NULL,
    code_challenge        TEXT NOT NULL,
    code_challenge_method TEXT NOT NULL,
    subject               TEXT NOT NULL,
    scopes                TEXT NOT NULL,
    claims                TEXT NOT NULL,
    state                 TEXT,
    approved_at           BIGINT NOT NULL,
    expires_at            BIGINT NOT NULL,
    consumed_at           BIGINT,
    token_id              TEXT
);
INSERT INTO oauth_grants_with_rowid SELECT * FROM oauth_grants;
DROP TABLE oauth_grants;
ALTER TABLE oauth_grants_with_rowid RENAME TO oauth_grants;

CREATE TABLE consent_sessions_with_rowid (
    id                      TEXT PRIMARY KEY NOT NULL,
    application_id          TEXT NOT NULL,
    client_id               TEXT NOT NULL,
    environment             TEXT NOT NULL,
    recipient               TEXT NOT NULL,
    intent                  TEXT NOT NULL,
    transaction_type        TEXT NOT NULL,
    transaction_description TEXT NOT NULL,
    amount_minor            BIGINT NOT NULL,
    currency                TEXT NOT NULL,
    payee                   TEXT NOT NULL,
    callback_url            TEXT NOT NULL,
    status                  TEXT NOT NULL,
    created_at              BIGINT NOT NULL,
    expires_at              BIGINT NOT NULL,
    decided_at              BIGINT
);
INSERT INTO consent_sessions_with_rowid SELECT * FROM consent_sessions;
DROP TABLE consent_sessions;
ALTER TABLE consent_sessions_with_rowid RENAME TO consent_sessions;
CREATE INDEX consent_sessions_by_recipient ON consent_sessions (recipient, environment, created_at);
CREATE INDEX consent_sessions_by_expiry ON consent_sessions (status, expires_at);
