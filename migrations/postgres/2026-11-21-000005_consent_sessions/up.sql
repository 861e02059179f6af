-- Consent sessions (idconsent-consent). Amounts in minor units of `currency`.
CREATE TABLE consent_sessions (
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
-- The flood guard counts a recipient's recent and pending sessions per environment.
CREATE INDEX consent_sessions_by_recipient ON consent_sessions (recipient, environment, created_at);
-- The expiry sweeper finds pending sessions by expiry.
CREATE INDEX consent_sessions_by_expiry ON consent_sessions (status, expires_at);
