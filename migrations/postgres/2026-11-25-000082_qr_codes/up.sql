-- QR codes merchants generate (POST /v1/qr/generate). The image is drawn on every read from
-- these inputs; the id (128+ random bits) alone fetches it.
CREATE TABLE qr_codes (
    id               TEXT PRIMARY KEY NOT NULL,
    application_id   TEXT NOT NULL,
    environment      TEXT NOT NULL,
    data             TEXT NOT NULL,
    format           TEXT NOT NULL,
    size             INTEGER NOT NULL,
    error_correction TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL
);
