-- The counter goes back into the passkey JSON, where the previous version reads it.
UPDATE devices
   SET passkey = json_set(passkey, '$.cred.counter', sign_count)
 WHERE json_valid(passkey) AND json_type(passkey, '$.cred.counter') = 'integer';
ALTER TABLE devices DROP COLUMN sign_count;
