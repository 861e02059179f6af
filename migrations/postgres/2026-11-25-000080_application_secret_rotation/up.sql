-- The request-signing secret can be rotated (issue 12 §5): the previous one keeps verifying
-- until previous_secret_expires_at (24 hours). Both columns are set together or both empty.
ALTER TABLE applications ADD COLUMN previous_secret TEXT;
ALTER TABLE applications ADD COLUMN previous_secret_expires_at BIGINT;
