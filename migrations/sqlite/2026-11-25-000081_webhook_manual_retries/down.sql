ALTER TABLE webhook_deliveries DROP COLUMN manual_retries_since;
ALTER TABLE webhook_deliveries DROP COLUMN manual_retries;
