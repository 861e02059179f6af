-- The outbox of SMS and email (idconsent-notification). Timestamps are milliseconds since the
-- Unix epoch in every table.
CREATE TABLE outgoing_messages (
    id              TEXT PRIMARY KEY NOT NULL,
    channel         TEXT NOT NULL,
    recipient       TEXT NOT NULL,
    subject         TEXT NOT NULL,
    body            TEXT NOT NULL,
    code            TEXT,
    link            TEXT,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    next_attempt_at BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT
);
CREATE INDEX outgoing_messages_by_recipient ON outgoing_messages (recipient, created_at);
CREATE INDEX outgoing_messages_due ON outgoing_messages (channel, status, next_attempt_at);
