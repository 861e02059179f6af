-- OAuth (idconsent-oauth): the details of OAUTH consent sessions, their authorization codes
-- (stored as keyed hashes, plus a sealed copy shown until exchanged) and the tokens issued.
CREATE TABLE oauth_requests (
    session_id            TEXT PRIMARY KEY NOT NULL,
    application_id        TEXT NOT NULL,
    client_id             TEXT NOT NULL,
    environment           TEXT NOT NULL,
    redirect_uri          TEXT NOT NULL,
    code_challenge        TEXT NOT NULL,
    code_challenge_method TEXT NOT NULL,
    claims                TEXT NOT NULL,
    scopes                TEXT NOT NULL,
    state                 TEXT,
    description           TEXT,
    created_at            BIGINT NOT NULL
);

CREATE TABLE oauth_grants (
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

CREATE TABLE oauth_tokens (
    token_id       TEXT PRIMARY KEY NOT NULL,
    application_id TEXT NOT NULL,
    client_id      TEXT NOT NULL,
    environment    TEXT NOT NULL,
    subject        TEXT NOT NULL,
    scopes         TEXT NOT NULL,
    claims         TEXT NOT NULL,
    issued_at      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    revoked_at     BIGINT
);
