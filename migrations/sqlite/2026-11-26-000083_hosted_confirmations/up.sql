-- Hosted approval pages (idconsent-hosted): per object and recipient address, the emailed
-- code (as a keyed hash) with its attempts and lock, the page token a right code bought, and
-- the browser passkey ceremony in between. Every limit is one conditional write on this row.
CREATE TABLE hosted_confirmations (
    subject          TEXT PRIMARY KEY NOT NULL,
    code_hash        TEXT,
    code_expires_at  BIGINT NOT NULL,
    attempts_left    INTEGER NOT NULL,
    code_sent_at     BIGINT NOT NULL,
    locked_until     BIGINT,
    token_hash       TEXT,
    token_expires_at BIGINT,
    ceremony         TEXT,
    passkey          TEXT,
    passkey_counter  BIGINT NOT NULL,
    context_hash     TEXT
);
