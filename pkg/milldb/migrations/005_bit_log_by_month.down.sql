-- Back to one unpartitioned bit_log (migration 002's table), rows kept. Two
-- rows of one item outside any run in different months become one: the
-- newest.
CREATE TABLE bit_log_flat (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id           text        NOT NULL,
    account          text        NOT NULL,
    store_id         text        NOT NULL,
    store_kind       text        NOT NULL,
    space_id         text        NOT NULL,
    content_id       text COLLATE "C" NOT NULL,
    result           text        NOT NULL,
    case_number      integer,
    content_checksum text,
    storage_checksum text,
    index_checksum   text,
    audit_checksum   text,
    details          text        NOT NULL DEFAULT '',
    checked_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT bit_log_result_check CHECK (result IN ('SUCCESS', 'FAILURE', 'ERROR')),
    CONSTRAINT bit_log_case_number_check CHECK (case_number IS NULL OR case_number > 0),
    CONSTRAINT bit_log_flat_item_per_run UNIQUE (run_id, account, store_id, space_id, content_id)
);

INSERT INTO bit_log_flat (run_id, account, store_id, store_kind, space_id, content_id, result,
    case_number, content_checksum, storage_checksum, index_checksum, audit_checksum, details, checked_at)
SELECT DISTINCT ON (run_id, account, store_id, space_id, content_id)
    run_id, account, store_id, store_kind, space_id, content_id, result,
    case_number, content_checksum, storage_checksum, index_checksum, audit_checksum, details, checked_at
FROM bit_log
ORDER BY run_id, account, store_id, space_id, content_id, checked_at DESC;

DROP FUNCTION IF EXISTS bit_log_ensure_month(date);
DROP FUNCTION IF EXISTS bit_log_drop_months(date);
DROP TABLE bit_log; -- and its partitions
ALTER TABLE bit_log_flat RENAME TO bit_log;
ALTER TABLE bit_log RENAME CONSTRAINT bit_log_flat_item_per_run TO bit_log_item_per_run;
ALTER INDEX bit_log_flat_pkey RENAME TO bit_log_pkey;
CREATE INDEX bit_log_run_result_idx ON bit_log (run_id, result);
CREATE INDEX bit_log_space_idx ON bit_log (account, store_id, space_id, content_id, checked_at DESC);
CREATE INDEX bit_log_problems_idx ON bit_log (checked_at DESC) WHERE result <> 'SUCCESS';
