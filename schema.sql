-- WORKER_NODE: one row per launch of a uidgen worker; its ID is the worker ID.
-- Valid on MySQL 5.7+, MySQL 8 and MariaDB 10+ (the same table as Baidu's UidGenerator).
CREATE TABLE IF NOT EXISTS WORKER_NODE (
    ID          BIGINT      NOT NULL AUTO_INCREMENT COMMENT 'auto increment id: the worker ID',
    HOST_NAME   VARCHAR(64) NOT NULL COMMENT 'host name',
    PORT        VARCHAR(64) NOT NULL COMMENT 'port, or pid-random on a machine',
    TYPE        INT         NOT NULL COMMENT 'node type: 1 container, 2 actual',
    LAUNCH_DATE DATE        NOT NULL COMMENT 'launch date',
    MODIFIED    TIMESTAMP   NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP COMMENT 'modified time',
    CREATED     TIMESTAMP   NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'created time',
    PRIMARY KEY (ID)
) ENGINE = InnoDB COMMENT = 'DB WorkerID Assigner for UID Generator';
