-- Merchant accounts, their teams, documents, one-time codes, applications and API credentials,
-- and the signed-request guards (idconsent-merchant). Timestamps are milliseconds since the
-- Unix epoch; sealed values are the vault's ciphertext text.
CREATE TABLE merchants (
    id                  TEXT PRIMARY KEY NOT NULL,
    business_name       TEXT NOT NULL,
    contact_name        TEXT NOT NULL,
    entity_type         TEXT NOT NULL,
    industry            TEXT NOT NULL,
    email               TEXT NOT NULL,
    phone               TEXT NOT NULL,
    email_verified_at   BIGINT,
    phone_verified_at   BIGINT,
    registered_name     TEXT NOT NULL,
    registration_number TEXT NOT NULL,
    -- YYYY-MM-DD
    date_registered     TEXT NOT NULL,
    address             TEXT,
    usecase             TEXT,
    description         TEXT,
    identity_type       TEXT,
    identity_number     TEXT,
    registry_status     TEXT NOT NULL,
    registry_checked_at BIGINT,
    status              TEXT NOT NULL,
    submitted_at        BIGINT,
    decided_at          BIGINT,
    rejection_reason    TEXT,
    plan                TEXT NOT NULL DEFAULT 'free',
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL
);
CREATE INDEX merchants_newest ON merchants (created_at, id);
CREATE INDEX merchants_by_status ON merchants (status, created_at, id);

CREATE TABLE merchant_users (
    id            TEXT PRIMARY KEY NOT NULL,
    merchant_id   TEXT NOT NULL REFERENCES merchants (id),
    email         TEXT NOT NULL,
    name          TEXT NOT NULL,
    role          TEXT NOT NULL,
    status        TEXT NOT NULL,
    password_hash TEXT,
    failed_logins INTEGER NOT NULL DEFAULT 0,
    locked_until  BIGINT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
-- An email belongs to at most one member (of any merchant) who has not been removed.
CREATE UNIQUE INDEX merchant_users_email ON merchant_users (email) WHERE status <> 'removed';
CREATE INDEX merchant_users_by_merchant ON merchant_users (merchant_id, created_at, id);

CREATE TABLE merchant_documents (
    id            TEXT PRIMARY KEY NOT NULL,
    merchant_id   TEXT NOT NULL REFERENCES merchants (id),
    document_type TEXT NOT NULL,
    file_name     TEXT NOT NULL,
    -- the MIME type
    format        TEXT NOT NULL,
    size          BIGINT NOT NULL,
    sha256        TEXT NOT NULL,
    blob_key      TEXT NOT NULL,
    status        TEXT NOT NULL,
    uploaded_at   BIGINT NOT NULL
);
CREATE INDEX merchant_documents_by_merchant ON merchant_documents (merchant_id, uploaded_at, id);

-- At most one code per purpose and subject; only a keyed hash of the code is stored.
CREATE TABLE one_time_codes (
    purpose       TEXT NOT NULL,
    subject       TEXT NOT NULL,
    code_hash     TEXT NOT NULL,
    expires_at    BIGINT NOT NULL,
    attempts_left INTEGER NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (purpose, subject)
);
CREATE INDEX one_time_codes_by_hash ON one_time_codes (purpose, code_hash);

CREATE TABLE applications (
    id                                 TEXT PRIMARY KEY NOT NULL,
    merchant_id                        TEXT NOT NULL REFERENCES merchants (id),
    client_id                          TEXT NOT NULL UNIQUE,
    name                               TEXT NOT NULL,
    callback_url                       TEXT NOT NULL,
    -- JSON array of URL strings
    redirect_uris                      TEXT NOT NULL,
    -- JSON array of intents (LOGIN, TRANSACTION, SIGNATURE, OAUTH)
    request_types                      TEXT NOT NULL,
    secret                             TEXT NOT NULL,
    webhook_secret                     TEXT NOT NULL,
    previous_webhook_secret            TEXT,
    previous_webhook_secret_expires_at BIGINT,
    created_at                         BIGINT NOT NULL,
    updated_at                         BIGINT NOT NULL
);
CREATE INDEX applications_by_merchant ON applications (merchant_id, created_at, id);

-- API keys, current and rotated out. The current key of an environment has no revoked_at.
CREATE TABLE api_credentials (
    id             INTEGER PRIMARY KEY NOT NULL,
    application_id TEXT NOT NULL REFERENCES applications (id),
    environment    TEXT NOT NULL,
    key_hash       TEXT NOT NULL UNIQUE,
    key_sealed     TEXT NOT NULL,
    generated_at   BIGINT NOT NULL,
    revoked_at     BIGINT
);
CREATE UNIQUE INDEX api_credentials_current ON api_credentials (application_id, environment)
    WHERE revoked_at IS NULL;

-- Signatures already accepted (replay protection).
CREATE TABLE request_fingerprints (
    fingerprint TEXT PRIMARY KEY NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX request_fingerprints_expiry ON request_fingerprints (expires_at);

-- Idempotency keys of signed POSTs, per scope (application and environment).
CREATE TABLE idempotency_keys (
    scope           TEXT NOT NULL,
    key             TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    -- in_progress | completed
    state           TEXT NOT NULL,
    response_status INTEGER,
    response_body   BLOB,
    created_at      BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
