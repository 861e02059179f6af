-- The ES256 keys that sign OAuth access tokens, shared by every server process; the private key
-- is sealed under the master key (idconsent_oauth::signing_keys).
CREATE TABLE oauth_signing_keys (
    kid          TEXT PRIMARY KEY NOT NULL,
    sealed_key   TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    activates_at BIGINT NOT NULL,
    retired_at   BIGINT
);
