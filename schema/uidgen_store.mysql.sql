-- The store's own records (uidgen's defences against a store that loses data), on MySQL or
-- MariaDB: see uidgen_store.sqlite.sql for what each name holds. Created when missing.
CREATE TABLE IF NOT EXISTS uidgen_store (
    name  VARCHAR(255)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    value VARCHAR(2048) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB;
