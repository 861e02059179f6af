ALTER TABLE applications DROP COLUMN previous_secret_expires_at;
ALTER TABLE applications DROP COLUMN previous_secret;
