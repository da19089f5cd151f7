-- Storage statistics (docs/ARCHITECTURE.md, Storage statistics): one row
-- per space per statistics run, written by the STORAGE_STATS processor from
-- a listing of the space, kept as history (the Java Mill's space_stats). A
-- redelivered task upserts its row through space_stats_space_per_run. IDs
-- compare byte-wise (COLLATE "C"), as the stores list them.
CREATE TABLE space_stats (
    run_id      text COLLATE "C" NOT NULL,
    account     text COLLATE "C" NOT NULL,
    store_id    text COLLATE "C" NOT NULL,
    space_id    text COLLATE "C" NOT NULL,
    item_count  bigint      NOT NULL,
    byte_count  bigint      NOT NULL,
    -- When the listing began and when it ended.
    started_at  timestamptz NOT NULL,
    measured_at timestamptz NOT NULL,
    CONSTRAINT space_stats_counts_check CHECK (item_count >= 0 AND byte_count >= 0),
    CONSTRAINT space_stats_space_per_run PRIMARY KEY (run_id, account, store_id, space_id)
);

-- Each space's latest measurement, and a space's history.
CREATE INDEX space_stats_space_idx ON space_stats (account, store_id, space_id, measured_at DESC, run_id DESC);

-- History across everything, latest first.
CREATE INDEX space_stats_measured_idx ON space_stats (measured_at DESC);
