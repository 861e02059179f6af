-- Files in the database (ADR 0037), when IDC_BLOB_STORE=database: an object is a header row
-- and its bytes in chunks of at most 1 MiB. Rowid tables: SQLite keeps large rows better there
-- than in a clustered (WITHOUT ROWID) index.
CREATE TABLE blob_objects (
    key       TEXT PRIMARY KEY NOT NULL,
    size      BIGINT NOT NULL,
    chunks    INTEGER NOT NULL,
    -- When it was stored (ms since the epoch), for sweeps of old keys.
    stored_at BIGINT NOT NULL
);

CREATE TABLE blob_chunks (
    blob_key TEXT NOT NULL REFERENCES blob_objects (key) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    bytes    BLOB NOT NULL,
    PRIMARY KEY (blob_key, seq)
);
