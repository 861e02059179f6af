-- Authorization codes gain an id (`ac_<id>_<secret>`, see crates/oauth/src/code.rs): grants are
-- found by it, time-ordered, instead of by the code's random hash. A grant stored before has no
-- id of its own: its hash is its id, which is how a code of the first format is looked up.
CREATE TABLE oauth_grants_by_id (
    code_id               TEXT PRIMARY KEY NOT NULL,
    code_hash             TEXT NOT NULL,
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
INSERT INTO oauth_grants_by_id (code_id, code_hash, sealed_code, session_id, application_id, redirect_uri, code_challenge, code_challenge_method, subject, scopes, claims, state, approved_at, expires_at, consumed_at, token_id)
    SELECT code_hash, code_hash, sealed_code, session_id, application_id, redirect_uri, code_challenge, code_challenge_method, subject, scopes, claims, state, approved_at, expires_at, consumed_at, token_id FROM oauth_grants;
DROP TABLE oauth_grants;
ALTER TABLE oauth_grants_by_id RENAME TO oauth_grants;
