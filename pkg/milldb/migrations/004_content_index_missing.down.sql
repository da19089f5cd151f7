DROP INDEX IF EXISTS content_index_tombstones_idx;
ALTER TABLE content_index DROP COLUMN IF EXISTS missing_run;
