CREATE TABLE request_fingerprints_by_key (
    fingerprint TEXT PRIMARY KEY NOT NULL,
    expires_at  BIGINT NOT NULL
);
INSERT OR IGNORE INTO request_fingerprints_by_key (fingerprint, expires_at)
    SELECT substr(fingerprint, instr(fingerprint, ':') + 1), expires_at FROM request_fingerprints;
DROP TABLE request_fingerprints;
ALTER TABLE request_fingerprints_by_key RENAME TO request_fingerprints;
CREATE INDEX request_fingerprints_expiry ON request_fingerprints (expires_at);
