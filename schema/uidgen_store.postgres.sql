-- The store's own records (uidgen's defences against a store that loses data), on
-- PostgreSQL: see uidgen_store.sqlite.sql for what each name holds. Created when missing.
CREATE TABLE IF NOT EXISTS uidgen_store (
    name  VARCHAR(255)  NOT NULL PRIMARY KEY,
    value VARCHAR(2048) NOT NULL
);
