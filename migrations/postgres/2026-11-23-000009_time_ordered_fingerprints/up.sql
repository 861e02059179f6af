-- Accepted signatures are now remembered as "<signed timestamp, 15 digits>:<signature>", so new
-- keys sort by time and land at the right edge of the key's B-tree instead of a random leaf
-- (see the SQLite migration). Rows already here are rewritten to the new form (signed at =
-- expires_at - the 5-minute window): a request accepted just before the upgrade stays refused.
UPDATE request_fingerprints
   SET fingerprint = lpad((expires_at - 300000)::text, 15, '0') || ':' || fingerprint
 WHERE position(':' in fingerprint) = 0;
