-- The bit-integrity report's "missing from storage" mark: the run whose
-- report first found the item missing; the next run's report reports and
-- repairs an item still missing. NULL when not missing.
ALTER TABLE content_index ADD COLUMN missing_run text;

-- Tombstones by age, for the retention purge (millctl bitlog retention):
-- small, because live rows are not in it.
CREATE INDEX content_index_tombstones_idx ON content_index (modified) WHERE deleted;
