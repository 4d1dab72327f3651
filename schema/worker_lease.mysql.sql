-- Worker-ID leases and time marks (uidgen's MySqlLeaseStore), for MySQL 5.7+/8 and
-- MariaDB 10+. The store creates it when missing; this is the same DDL.
-- HOLDER is NULL while the worker ID is free; EXPIRES_MS is the server's clock in Unix
-- milliseconds; MARK_MS is the end of the highest tick a holder may have used (0: never).
CREATE TABLE IF NOT EXISTS WORKER_LEASE (
    WORKER_ID  BIGINT       NOT NULL,
    HOLDER     VARCHAR(255) NULL,
    EXPIRES_MS BIGINT       NOT NULL DEFAULT 0,
    MARK_MS    BIGINT       NOT NULL DEFAULT 0,
    MODIFIED   DATETIME(3)  NOT NULL,
    PRIMARY KEY (WORKER_ID)
) ENGINE = InnoDB;
