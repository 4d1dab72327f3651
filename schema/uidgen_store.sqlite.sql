-- The store's own records (uidgen's defences against a store that loses data), in SQLite.
-- store_id: a random identity and the time it was written, made when the store is first
-- set up; every process remembers it and refuses the store if it changes or vanishes.
-- lost: word left by a process that saw the store lose data (cleared by `uidgen store repair`).
-- floor:SCOPE<TAB>TAG, mark_floor, tag:SCOPE<TAB>TAG: the highest range end known, the lowest
-- time mark a new lease gets, and tags created here. The store creates it when missing.
CREATE TABLE IF NOT EXISTS uidgen_store (
    name  TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
);
