-- Billing (issue 17, ADR 0029). A merchant's plan name stays on merchants.plan; the limits it
-- applies (custom for enterprise) are here, written with it.
CREATE TABLE billing_plans (
    merchant_id TEXT PRIMARY KEY,
    plan        TEXT NOT NULL,
    per_minute  BIGINT NOT NULL,
    per_day     BIGINT,
    concurrent  BIGINT NOT NULL
);

-- The shared request budget per merchant (billing::budget): the GCRA's theoretical arrival
-- time and the day's count. Server processes lease slices of it; never written per request.
CREATE TABLE rate_budgets (
    merchant_id TEXT PRIMARY KEY,
    tat_micros  BIGINT NOT NULL,
    day         BIGINT NOT NULL,
    day_used    BIGINT NOT NULL
);

-- Live signed API calls per merchant and UTC day (days since the epoch), as the processes
-- report them; `period` (YYYY-MM) so a month sums in one range.
CREATE TABLE api_calls (
    merchant_id TEXT NOT NULL,
    period      TEXT NOT NULL,
    day         BIGINT NOT NULL,
    calls       BIGINT NOT NULL,
    PRIMARY KEY (merchant_id, period, day)
);

-- One invoice per merchant and month; amounts in cents, items as JSON.
CREATE TABLE invoices (
    id           TEXT PRIMARY KEY,
    merchant_id  TEXT NOT NULL,
    period       TEXT NOT NULL,
    plan         TEXT NOT NULL,
    currency     TEXT NOT NULL,
    amount_cents BIGINT NOT NULL,
    items        TEXT NOT NULL,
    status       TEXT NOT NULL,
    issued_at    BIGINT NOT NULL,
    due_at       BIGINT NOT NULL,
    paid_at      BIGINT,
    UNIQUE (merchant_id, period)
);
CREATE INDEX invoices_pending_by_due ON invoices (status, due_at);
