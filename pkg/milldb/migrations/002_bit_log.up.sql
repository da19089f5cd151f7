-- The bit log: one row per item per bit-integrity run (docs/ARCHITECTURE.md,
-- Bit integrity). A redelivered BIT task upserts its row through
-- bit_log_item_per_run.
CREATE TABLE bit_log (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id           text        NOT NULL,
    account          text        NOT NULL,
    store_id         text        NOT NULL,
    store_kind       text        NOT NULL,
    space_id         text        NOT NULL,
    content_id       text COLLATE "C" NOT NULL,
    result           text        NOT NULL,
    -- Row of the bit-integrity decision table that applied (1-based).
    case_number      integer,
    content_checksum text,
    storage_checksum text,
    index_checksum   text,
    audit_checksum   text,
    details          text        NOT NULL DEFAULT '',
    checked_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT bit_log_result_check CHECK (result IN ('SUCCESS', 'FAILURE', 'ERROR')),
    CONSTRAINT bit_log_case_number_check CHECK (case_number IS NULL OR case_number > 0),
    -- Also the index for "every result of a run" and "every result of a
    -- space in a run" (the report processor's completeness check).
    CONSTRAINT bit_log_item_per_run UNIQUE (run_id, account, store_id, space_id, content_id)
);

-- Results of a run by outcome ("the failures of run X").
CREATE INDEX bit_log_run_result_idx ON bit_log (run_id, result);

-- History of a space (or one item) across runs, newest first.
CREATE INDEX bit_log_space_idx ON bit_log (account, store_id, space_id, content_id, checked_at DESC);

-- Recent problems across all runs; small because most rows are SUCCESS.
CREATE INDEX bit_log_problems_idx ON bit_log (checked_at DESC) WHERE result <> 'SUCCESS';
