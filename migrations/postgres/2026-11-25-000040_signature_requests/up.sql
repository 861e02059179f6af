-- Signature requests (idconsent-signature). The signers and the audit trail change together with
-- the status and are only ever read with the request, so they are one JSON document (`body`);
-- every transition is a compare-and-swap on `version`.
CREATE TABLE signature_requests (
    id              TEXT PRIMARY KEY NOT NULL,
    application_id  TEXT NOT NULL,
    environment     TEXT NOT NULL,
    status          TEXT NOT NULL,
    document_sha256 TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL,
    completed_at    BIGINT,
    version         BIGINT NOT NULL,
    body            TEXT NOT NULL
);
-- The expiry sweeper finds pending requests by expiry.
CREATE INDEX signature_requests_by_expiry ON signature_requests (status, expires_at);
