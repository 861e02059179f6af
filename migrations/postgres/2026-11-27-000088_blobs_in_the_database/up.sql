-- Files in the database (ADR 0037): the BlobStore for deployments on PostgreSQL without an
-- object store, so that every process reads what any process stored (issue 31 §10). An object
-- is a header row and its bytes in chunks of at most 1 MiB, so that no statement carries a
-- whole 15 MiB upload.
-- Keys compare byte for byte (COLLATE "C"), so that a folder's keys are one range of the
-- primary key and listings come in bytewise order, as on SQLite.
CREATE TABLE blob_objects (
    key       TEXT COLLATE "C" PRIMARY KEY,
    size      BIGINT NOT NULL,
    chunks    INTEGER NOT NULL,
    -- When it was stored (ms since the epoch), for sweeps of old keys.
    stored_at BIGINT NOT NULL
);

CREATE TABLE blob_chunks (
    blob_key TEXT COLLATE "C" NOT NULL REFERENCES blob_objects (key) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    bytes    BYTEA NOT NULL,
    PRIMARY KEY (blob_key, seq)
);

-- PDFs and images are compressed already: stored out of line as they are, without TOAST's
-- attempt to compress each chunk.
ALTER TABLE blob_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL;
