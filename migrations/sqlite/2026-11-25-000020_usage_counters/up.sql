-- Metered actions per merchant, metric and calendar month (kernel::usage), incremented in the
-- same transaction as the action itself.
CREATE TABLE usage_counters (
    merchant_id TEXT NOT NULL,
    metric      TEXT NOT NULL,
    period      TEXT NOT NULL,
    used        BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (merchant_id, metric, period)
) WITHOUT ROWID;
