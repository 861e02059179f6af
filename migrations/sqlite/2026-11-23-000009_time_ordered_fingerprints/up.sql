-- Accepted signatures are now remembered as "<signed timestamp, 15 digits>:<signature>", so new
-- keys sort by time: a bare signature is random, and every accepted request inserted into a
-- random leaf of the key's B-tree, which under load made each commit rewrite one page per
-- request. WITHOUT ROWID: the key is the table, one B-tree instead of two. Rows already here are
-- rewritten to the new form (signed at = expires_at - the 5-minute window), so a request accepted
-- just before the upgrade is still refused as a replay after it.
CREATE TABLE request_fingerprints_by_time (
    fingerprint TEXT PRIMARY KEY NOT NULL,
    expires_at  BIGINT NOT NULL
) WITHOUT ROWID;
INSERT INTO request_fingerprints_by_time (fingerprint, expires_at)
    SELECT printf('%015d:%s', expires_at - 300000, fingerprint), expires_at
      FROM request_fingerprints;
DROP TABLE request_fingerprints;
ALTER TABLE request_fingerprints_by_time RENAME TO request_fingerprints;
CREATE INDEX request_fingerprints_expiry ON request_fingerprints (expires_at);
