-- The counter goes back into the passkey JSON, where the previous version reads it.
UPDATE devices
   SET passkey = jsonb_set(passkey::jsonb, '{cred,counter}', to_jsonb(sign_count))::TEXT
 WHERE passkey LIKE '{%'
   AND jsonb_typeof(passkey::jsonb #> '{cred,counter}') = 'number';
ALTER TABLE devices DROP COLUMN sign_count;
