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
INSERT INTO oauth_grants_by_code (code_hash, sealed_code, session_id, application_id, redirect_uri, code_challenge, code_challenge_method, subject, scopes, claims, state, approved_at, expires_at, consumed_at, token_id)
    SELECT code_hash, sealed_code, session_id, application_id, redirect_uri, code_challenge, code_challenge_method, subject, scopes, claims, state, approved_at, expires_at, consumed_at, token_id FROM oauth_grants;
DROP TABLE oauth_grants;
ALTER TABLE oauth_grants_by_code RENAME TO oauth_grants;
