-- A device's signature counter gets its own column, so that verifying an assertion updates one
-- integer instead of rewriting the passkey JSON. Existing devices start from the counter their
-- stored passkey (webauthn-rs's `{"cred": {"counter": …}}`) holds.
ALTER TABLE devices ADD COLUMN sign_count BIGINT NOT NULL DEFAULT 0;
UPDATE devices
   SET sign_count = COALESCE(json_extract(passkey, '$.cred.counter'), 0)
 WHERE json_valid(passkey) AND json_type(passkey, '$.cred.counter') = 'integer';
