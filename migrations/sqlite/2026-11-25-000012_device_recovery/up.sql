-- Pending devices (added to an enrolled phone) and their recovery's end (ADR 0013).
ALTER TABLE devices ADD COLUMN recovery_ends_at BIGINT;
CREATE INDEX devices_recovery_due ON devices (recovery_ends_at) WHERE recovery_ends_at IS NOT NULL;
