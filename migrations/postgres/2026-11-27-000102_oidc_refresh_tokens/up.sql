-- OpenID Connect refresh tokens (issue 34): stored as keyed hashes, rotated on every use. A
-- family is the consent session the first code was granted on; presenting a used token again
-- revokes the whole family.
CREATE TABLE oidc_refresh_tokens (
    token_hash      TEXT PRIMARY KEY NOT NULL,
    family          TEXT NOT NULL,
    application_id  TEXT NOT NULL,
    root_token_id   TEXT NOT NULL,
    issued_at       BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL,
    used_at         BIGINT,
    revoked_at      BIGINT
);
CREATE INDEX oidc_refresh_tokens_family ON oidc_refresh_tokens (family);
