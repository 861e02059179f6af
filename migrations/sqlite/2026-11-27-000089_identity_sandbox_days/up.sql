-- Sandbox verifications per application and UTC day (issue 31): counted in the transaction that
-- stores the verification, refused at the configured cap.
CREATE TABLE identity_sandbox_days (
    application_id TEXT NOT NULL,
    day            TEXT NOT NULL,
    used           BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (application_id, day)
) WITHOUT ROWID;
