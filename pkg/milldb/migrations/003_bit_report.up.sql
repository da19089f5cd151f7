-- Bit-integrity reports: one row per space per run, written by the report
-- processor after the space's TSV report is stored (docs/ARCHITECTURE.md, Bit
-- integrity). A redelivered BIT_REPORT task upserts its row through
-- bit_report_space_per_run.
CREATE TABLE bit_report (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id          text        NOT NULL,
    account         text        NOT NULL,
    store_id        text        NOT NULL,
    space_id        text        NOT NULL,
    result          text        NOT NULL,
    total_count     bigint      NOT NULL DEFAULT 0,
    success_count   bigint      NOT NULL DEFAULT 0,
    failure_count   bigint      NOT NULL DEFAULT 0,
    error_count     bigint      NOT NULL DEFAULT 0,
    -- Where the TSV report is, e.g. s3://mill-reports/bit-integrity/...
    report_location text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT bit_report_result_check CHECK (result IN ('SUCCESS', 'FAILURE', 'ERROR')),
    CONSTRAINT bit_report_counts_check CHECK (
        total_count >= 0 AND success_count >= 0 AND failure_count >= 0 AND error_count >= 0),
    CONSTRAINT bit_report_space_per_run UNIQUE (run_id, account, store_id, space_id)
);

-- Reports of a space across runs, newest first.
CREATE INDEX bit_report_space_idx ON bit_report (account, store_id, space_id, created_at DESC);

-- Latest reports across everything (millctl bitlog).
CREATE INDEX bit_report_created_idx ON bit_report (created_at DESC);
