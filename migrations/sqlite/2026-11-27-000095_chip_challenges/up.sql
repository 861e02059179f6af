-- Active-authentication challenges issued to applications (ICAO 9303-11; CONTRACT §10): single
-- use (a take deletes the row), five minutes; issuing deletes the expired ones.
CREATE TABLE chip_challenges (
    application_id TEXT NOT NULL,
    challenge      TEXT NOT NULL,
    issued_at      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    PRIMARY KEY (application_id, challenge)
) WITHOUT ROWID;
CREATE INDEX chip_challenges_expiry ON chip_challenges (expires_at);
