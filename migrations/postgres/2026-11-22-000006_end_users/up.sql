-- End users (idconsent-enduser): one per phone, their enrollments, passkey devices, FIDO
-- challenges and the app's refresh tokens (stored as keyed hashes only).
CREATE TABLE end_users (
    id          TEXT PRIMARY KEY NOT NULL,
    phone       TEXT NOT NULL UNIQUE,
    handle      TEXT NOT NULL,
    name        TEXT,
    enrolled_at BIGINT,
    created_at  BIGINT NOT NULL
);

CREATE TABLE enrollments (
    id                TEXT PRIMARY KEY NOT NULL,
    phone             TEXT NOT NULL,
    name              TEXT,
    device_name       TEXT,
    platform          TEXT,
    installation      TEXT NOT NULL,
    application_id    TEXT,
    environment       TEXT,
    callback_url      TEXT,
    status            TEXT NOT NULL,
    otp_hash          TEXT NOT NULL,
    otp_attempts_left INTEGER NOT NULL,
    otp_expires_at    BIGINT NOT NULL,
    device_id         TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
-- The SMS flood guard counts a phone's recent enrollments.
CREATE INDEX enrollments_by_phone ON enrollments (phone, created_at);

CREATE TABLE devices (
    id             TEXT PRIMARY KEY NOT NULL,
    user_id        TEXT NOT NULL REFERENCES end_users (id),
    name           TEXT NOT NULL,
    platform       TEXT NOT NULL,
    installation   TEXT NOT NULL,
    application_id TEXT,
    environment    TEXT,
    callback_url   TEXT,
    status         TEXT NOT NULL,
    credential_id  TEXT NOT NULL UNIQUE,
    passkey        TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    last_used_at   BIGINT
);
CREATE INDEX devices_by_user ON devices (user_id);

CREATE TABLE fido_challenges (
    id            TEXT PRIMARY KEY NOT NULL,
    purpose_type  TEXT NOT NULL,
    purpose_id    TEXT,
    phone         TEXT NOT NULL,
    enrollment_id TEXT,
    state         TEXT NOT NULL,
    context_hash  TEXT,
    expires_at    BIGINT NOT NULL,
    used_at       BIGINT,
    created_at    BIGINT NOT NULL
);
-- Expired challenges are swept by expiry.
CREATE INDEX fido_challenges_by_expiry ON fido_challenges (expires_at);

CREATE TABLE refresh_tokens (
    hash         TEXT PRIMARY KEY NOT NULL,
    family       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    device_id    TEXT NOT NULL,
    installation TEXT NOT NULL,
    expires_at   BIGINT NOT NULL,
    used_at      BIGINT,
    revoked_at   BIGINT,
    created_at   BIGINT NOT NULL
);
CREATE INDEX refresh_tokens_by_family ON refresh_tokens (family);
CREATE INDEX refresh_tokens_by_device ON refresh_tokens (device_id);
