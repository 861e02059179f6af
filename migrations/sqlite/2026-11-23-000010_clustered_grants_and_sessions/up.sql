-- The token exchange reads a grant by its code hash together with its session by id. In a rowid
-- table each of those lookups is two B-tree descents (the key's index, then the table); WITHOUT
-- ROWID the key is the table, and one descent finds the row. That halves the pages a read
-- fetches, and a SQLite read connection fetches every page afresh once another connection has
-- written (docs/performance.md). Same columns, rows and indexes as before.
CREATE TABLE oauth_grants_by_code (
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
) WITHOUT ROWID;
INSERT INTO oauth_grants_by_code SELECT * FROM oauth_grants;
DROP TABLE oauth_grants;
ALTER TABLE oauth_grants_by_code RENAME TO oauth_grants;

CREATE TABLE consent_sessions_by_id (
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
) WITHOUT ROWID;
INSERT INTO consent_sessions_by_id SELECT * FROM consent_sessions;
DROP TABLE consent_sessions;
ALTER TABLE consent_sessions_by_id RENAME TO consent_sessions;
CREATE INDEX consent_sessions_by_recipient ON consent_sessions (recipient, environment, created_at);
CREATE INDEX consent_sessions_by_expiry ON consent_sessions (status, expires_at);
