-- Segment counters (uidgen's SqliteSegmentStore): Meituan Leaf's leaf_alloc, in SQLite.
-- The store creates it when missing; this is the same DDL.
-- MAX_ID is the first ID not yet handed to anyone; a generator takes [MAX_ID, MAX_ID + step)
-- by raising it in one statement. STEP is the tag's base (smallest) step.
-- UPDATE_TIME is Unix milliseconds.
CREATE TABLE IF NOT EXISTS leaf_alloc (
    biz_tag     TEXT    NOT NULL PRIMARY KEY,
    max_id      INTEGER NOT NULL DEFAULT 1,
    step        INTEGER NOT NULL,
    description TEXT,
    update_time INTEGER NOT NULL DEFAULT 0
);
