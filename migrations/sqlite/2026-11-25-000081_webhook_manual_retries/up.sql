-- Manual retries are capped per delivery (issue 12 §5): how many in the current window, and
-- when that window began.
ALTER TABLE webhook_deliveries ADD COLUMN manual_retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_deliveries ADD COLUMN manual_retries_since BIGINT;
