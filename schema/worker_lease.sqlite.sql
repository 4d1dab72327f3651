-- Worker-ID leases and time marks (uidgen's SqliteLeaseStore), in SQLite. The store
-- creates it when missing; this is the same DDL.
-- HOLDER is NULL while the worker ID is free; EXPIRES_MS is this machine's clock in Unix
-- milliseconds; MARK_MS is the end of the highest tick a holder may have used (0: never).
CREATE TABLE IF NOT EXISTS WORKER_LEASE (
    WORKER_ID  INTEGER PRIMARY KEY,
    HOLDER     TEXT,
    EXPIRES_MS INTEGER NOT NULL DEFAULT 0,
    MARK_MS    INTEGER NOT NULL DEFAULT 0,
    MODIFIED   TEXT    NOT NULL
);
