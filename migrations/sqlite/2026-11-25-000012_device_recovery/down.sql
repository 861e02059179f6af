DROP INDEX devices_recovery_due;
ALTER TABLE devices DROP COLUMN recovery_ends_at;
