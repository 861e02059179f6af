-- Identity verifications (idconsent-verification), each also its own analysis job: `processing`
-- rows are claimed by a worker (`leased_until`, `attempts`) and finished with their outcome.
-- What is only ever read whole (images, outcome) is one JSON document (`body`); every claim and
-- the completion are a compare-and-swap on `version`.
CREATE TABLE identity_verifications (
    id             TEXT PRIMARY KEY NOT NULL,
    application_id TEXT NOT NULL,
    environment    TEXT NOT NULL,
    document_type  TEXT NOT NULL,
    country        TEXT NOT NULL,
    status         TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    leased_until   BIGINT,
    attempts       INTEGER NOT NULL,
    version        BIGINT NOT NULL,
    body           TEXT NOT NULL
);
-- The analysis workers find open jobs oldest first.
CREATE INDEX identity_verifications_jobs ON identity_verifications (status, created_at, id);
