-- Segment counters (uidgen's MySqlSegmentStore): Meituan Leaf's leaf_alloc table, as Leaf
-- ships it but for biz_tag's collation, so a Leaf deployment's table can be used as it is
-- (and the other way round). Tags compare byte for byte on every uidgen store: the store
-- moves a case-insensitive biz_tag of an existing table to utf8mb4_bin on first connect.
-- The store creates the table when missing; this is the same DDL.
-- max_id is the first ID not yet handed to anyone; a generator takes [max_id, max_id + step)
-- with one UPDATE ... SET max_id = LAST_INSERT_ID(max_id + step) and reads the new value
-- from that statement's own reply. step is the tag's base (smallest) step.
CREATE TABLE IF NOT EXISTS leaf_alloc (
    biz_tag     VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
    max_id      BIGINT       NOT NULL DEFAULT 1,
    step        INT          NOT NULL,
    description VARCHAR(256) DEFAULT NULL,
    update_time TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
    PRIMARY KEY (biz_tag)
) ENGINE = InnoDB;
