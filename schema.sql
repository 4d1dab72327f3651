-- WORKER_NODE: one row per launch of a uidgen worker; its ID is the worker ID.
-- Valid on MySQL 5.7+, MySQL 8 and MariaDB 10+. Its columns are those of Baidu
-- UidGenerator's table, so either program can use the other's.
CREATE TABLE IF NOT EXISTS WORKER_NODE (
    ID          BIGINT      NOT NULL AUTO_INCREMENT COMMENT 'the worker ID, one per launch',
    HOST_NAME   VARCHAR(64) NOT NULL COMMENT 'the machine or container that launched',
    PORT        VARCHAR(64) NOT NULL COMMENT 'its port, or process ID and a random number',
    TYPE        INT         NOT NULL COMMENT '1 in a container, 2 on a machine',
    LAUNCH_DATE DATE        NOT NULL COMMENT 'the day of the launch',
    MODIFIED    TIMESTAMP   NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP COMMENT 'last change',
    CREATED     TIMESTAMP   NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'when the row was written',
    PRIMARY KEY (ID)
) ENGINE = InnoDB COMMENT = 'uidgen worker IDs, one row per launch';
