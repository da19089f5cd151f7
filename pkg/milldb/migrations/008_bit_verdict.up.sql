-- How each bit check made its content checksum (docs/ARCHITECTURE.md, Bit
-- integrity): method is 'read' (Mill read and hashed the bytes), 'at-rest'
-- (the provider computed the checksum of the stored bytes) or 'stored' (no
-- byte was hashed); bytes is how many bytes were hashed; archived, whether
-- the copy was in an archival storage class. Rows written before this
-- migration have no method (NULL): they are not fresh verdicts, so there is
-- nothing to backfill into bit_verdict. Adding the columns is a catalog
-- change; checking the constraints reads the bit log once.
ALTER TABLE bit_log
    ADD COLUMN method   text,
    ADD COLUMN bytes    bigint  NOT NULL DEFAULT 0,
    ADD COLUMN archived boolean NOT NULL DEFAULT false;
ALTER TABLE bit_log ADD CONSTRAINT bit_log_method_check CHECK (method IS NULL OR method IN ('read', 'at-rest', 'stored'));
ALTER TABLE bit_log ADD CONSTRAINT bit_log_bytes_check CHECK (bytes >= 0);

-- The latest fresh verdict of each copy over every run: the newest row
-- whose method is 'read' or 'at-rest' and whose result is SUCCESS or
-- FAILURE. The application upserts it in the statement that records the
-- row, moving only forward in time. It is not partitioned and not touched
-- by the bit log's retention (bit_log_drop_months): a copy keeps its
-- verdict however old. Fixity coverage reads a space's verdicts in
-- content order, a range scan of the primary key. IDs compare byte-wise
-- (COLLATE "C"), as the content index's do.
CREATE TABLE bit_verdict (
    account    text COLLATE "C" NOT NULL,
    store_id   text COLLATE "C" NOT NULL,
    space_id   text COLLATE "C" NOT NULL,
    content_id text COLLATE "C" NOT NULL,
    result     text        NOT NULL,
    method     text        NOT NULL,
    archived   boolean     NOT NULL DEFAULT false,
    checked_at timestamptz NOT NULL,
    CONSTRAINT bit_verdict_result_check CHECK (result IN ('SUCCESS', 'FAILURE')),
    CONSTRAINT bit_verdict_method_check CHECK (method IN ('read', 'at-rest')),
    -- The other columns are in the index too, so reading a space's
    -- verdicts is an index-only scan: pages of the index in content order,
    -- not a heap page per copy (25 times faster on a million copies).
    CONSTRAINT bit_verdict_per_copy PRIMARY KEY (account, store_id, space_id, content_id)
        INCLUDE (result, method, archived, checked_at)
) WITH (
    -- An index-only scan reads the heap for pages changed since the last
    -- vacuum: vacuum after 2% of the copies changed, not the default 20%.
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.02
);
