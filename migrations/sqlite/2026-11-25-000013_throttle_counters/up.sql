-- Fixed-window event counters shared by every process (kernel Throttle): SMS/email send limits.
CREATE TABLE throttle_counters (
    key          TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    used         BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (key, window_start)
) WITHOUT ROWID;
