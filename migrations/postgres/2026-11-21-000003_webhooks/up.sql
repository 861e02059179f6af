-- Webhook events and their deliveries (idconsent-webhook). Rows are written in the same
-- transaction as the state change they report, and leased, never deleted, until delivered.
CREATE TABLE webhook_events (
    id             TEXT PRIMARY KEY NOT NULL,
    event_type     TEXT NOT NULL,
    application_id TEXT NOT NULL,
    environment    TEXT NOT NULL,
    body           BYTEA NOT NULL,
    created_at     BIGINT NOT NULL
);

CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY NOT NULL,
    event_id        TEXT NOT NULL REFERENCES webhook_events (id),
    application_id  TEXT NOT NULL,
    environment     TEXT NOT NULL,
    url             TEXT NOT NULL,
    status          TEXT NOT NULL,
    next_attempt_at BIGINT,
    created_at      BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_by_application
    ON webhook_deliveries (application_id, environment, created_at);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);

CREATE TABLE webhook_attempts (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id),
    attempted_at BIGINT NOT NULL,
    status_code INTEGER,
    error       TEXT,
    duration_ms BIGINT NOT NULL
);
CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id, id);
