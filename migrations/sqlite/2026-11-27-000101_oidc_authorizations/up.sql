-- What an OpenID Connect authorization request adds to its consent session (issue 34): the
-- client's nonce, echoed in the ID token; for a CIBA request (`backchannel`), when the client
-- last polled, so that polling faster than the interval is `slow_down`. One row per session,
-- written right after the session.
CREATE TABLE oidc_authorizations (
    session_id      TEXT PRIMARY KEY NOT NULL,
    application_id  TEXT NOT NULL,
    nonce           TEXT,
    backchannel     BOOLEAN NOT NULL,
    last_polled_at  BIGINT,
    created_at      BIGINT NOT NULL
);
