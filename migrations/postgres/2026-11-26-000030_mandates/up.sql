-- Digital mandates (idconsent-mandate). The terms are columns so lists can filter and a
-- re-authorisation can keep the authorised terms (`authorized_*`, set only while new terms
-- await approval) next to the new ones; every change is a compare-and-swap on `version`.
CREATE TABLE mandates (
    id                     TEXT PRIMARY KEY NOT NULL,
    application_id         TEXT NOT NULL,
    environment            TEXT NOT NULL,
    status                 TEXT NOT NULL,
    kind                   TEXT NOT NULL,
    -- an E.164 phone or an email address
    recipient              TEXT NOT NULL,
    amount_minor           BIGINT,
    currency               TEXT NOT NULL,
    frequency              TEXT,
    description            TEXT NOT NULL,
    callback_url           TEXT,
    authorized_amount_minor BIGINT,
    authorized_currency    TEXT,
    authorized_frequency   TEXT,
    created_at             BIGINT NOT NULL,
    updated_at             BIGINT NOT NULL,
    authorization_deadline BIGINT,
    authorized_at          BIGINT,
    cancelled_at           BIGINT,
    version                BIGINT NOT NULL
);
-- An application's list, newest first, per environment.
CREATE INDEX mandates_by_application ON mandates (application_id, environment, created_at, id);
-- The expiry sweeper finds pending mandates by deadline.
CREATE INDEX mandates_by_deadline ON mandates (status, authorization_deadline);
