-- The tables of DuraCloud's mill database that Mill writes, as DuraCloud's
-- mill-db-repo entities define them (MySQL 5.6+, MariaDB 10+). A deployment
-- that already has them keeps them as they are (IF NOT EXISTS).

-- ManifestItem (org.duracloud.mill.db.model.ManifestItem): one row per item
-- of a space, keyed by the MD5 of account/store/space/content.
CREATE TABLE IF NOT EXISTS manifest_item (
  id bigint(20) NOT NULL AUTO_INCREMENT,
  modified datetime(3) NOT NULL,
  account varchar(255) NOT NULL,
  content_checksum varchar(255) NOT NULL,
  content_id varchar(1024) CHARACTER SET utf8mb3 COLLATE utf8mb3_bin NOT NULL,
  content_mimetype varchar(255) NOT NULL,
  content_size varchar(255) NOT NULL,
  deleted bit(1) NOT NULL,
  missing_from_storage_provider bit(1) NOT NULL,
  space_id varchar(255) NOT NULL,
  store_id varchar(255) NOT NULL,
  unique_key char(32) NOT NULL,
  version int(11) NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  UNIQUE KEY idx_unique_key (unique_key),
  KEY idx_account_id (deleted, account),
  KEY idx_space_id_2 (account, store_id, space_id, deleted),
  KEY idx_content_id_2 (account, store_id, space_id, content_id(255))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3;

-- BitIntegrityReport (org.duracloud.mill.db.model.BitIntegrityReport): one
-- row per report, naming where the report file is.
CREATE TABLE IF NOT EXISTS bit_report (
  id bigint(20) NOT NULL AUTO_INCREMENT,
  modified datetime(3) DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  account varchar(255) NOT NULL,
  completion_date datetime NOT NULL,
  display bit(1) NOT NULL,
  report_content_id varchar(1024) NOT NULL,
  report_space_id varchar(255) NOT NULL,
  result varchar(255) DEFAULT NULL,
  space_id varchar(255) NOT NULL,
  store_id varchar(255) NOT NULL,
  version int(11) NOT NULL DEFAULT 0,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3;

-- SpaceStats (org.duracloud.mill.db.model.SpaceStats): one row per space per
-- measurement.
CREATE TABLE IF NOT EXISTS space_stats (
  id bigint(20) NOT NULL AUTO_INCREMENT,
  modified datetime NOT NULL,
  account_id varchar(65) NOT NULL,
  space_id varchar(65) NOT NULL,
  store_id varchar(10) NOT NULL,
  byte_count bigint(20) NOT NULL DEFAULT 0,
  object_count bigint(20) NOT NULL DEFAULT 0,
  version int(11) NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  UNIQUE KEY idx_space_stat_unique (account_id, store_id, space_id, modified),
  KEY idx_space_stat_space (account_id, store_id, space_id),
  KEY idx_space_stat_store (account_id, store_id),
  KEY idx_space_stat_account_id (account_id),
  KEY idx_modified (modified)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3;
