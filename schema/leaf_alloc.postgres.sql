-- Segment counters (uidgen's PostgresSegmentStore): Meituan Leaf's leaf_alloc, for
-- PostgreSQL 10+. The store creates it when missing; this is the same DDL.
-- max_id is the first ID not yet handed to anyone; a generator takes [max_id, max_id + step)
-- with one UPDATE ... RETURNING max_id. step is the tag's base (smallest) step.
CREATE TABLE IF NOT EXISTS leaf_alloc (
    biz_tag     VARCHAR(128) NOT NULL PRIMARY KEY,
    max_id      BIGINT       NOT NULL DEFAULT 1,
    step        INTEGER      NOT NULL,
    description VARCHAR(256),
    update_time TIMESTAMPTZ  NOT NULL DEFAULT now()
);
