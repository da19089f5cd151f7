-- The bit producer's record of each space of its runs (docs/ARCHITECTURE.md,
-- Bit integrity): written only by bitproducer, when it begins listing a
-- space (started_at) and when the listing ends (listed_at, expected: the
-- items it listed), before it queues the space's BIT_REPORT. The report
-- processor makes a report only for a recorded run and waits for expected
-- results; the skip logic (--skip-recent) trusts only a report that covered
-- every item of a recorded run. Reports made before this table existed have
-- no record, so they are not trusted. IDs compare byte-wise (COLLATE "C").
CREATE TABLE bit_run_space (
    run_id     text COLLATE "C" NOT NULL,
    account    text COLLATE "C" NOT NULL,
    store_id   text COLLATE "C" NOT NULL,
    space_id   text COLLATE "C" NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    -- NULL while the producer lists the space.
    listed_at  timestamptz,
    expected   bigint,
    CONSTRAINT bit_run_space_listed_check CHECK ((listed_at IS NULL) = (expected IS NULL)),
    CONSTRAINT bit_run_space_expected_check CHECK (expected IS NULL OR expected >= 0),
    CONSTRAINT bit_run_space_per_run PRIMARY KEY (run_id, account, store_id, space_id)
);

-- A report of a run that checked no item of its space is EMPTY, not
-- SUCCESS: a SUCCESS counts at least one item. Earlier SUCCESS reports of
-- no item (an empty space, or a forged BIT_REPORT claiming 0 items) become
-- EMPTY.
ALTER TABLE bit_report DROP CONSTRAINT bit_report_result_check;
UPDATE bit_report SET result = 'EMPTY' WHERE result = 'SUCCESS' AND total_count = 0;
ALTER TABLE bit_report ADD CONSTRAINT bit_report_result_check CHECK (result IN ('SUCCESS', 'FAILURE', 'ERROR', 'EMPTY'));
ALTER TABLE bit_report ADD CONSTRAINT bit_report_success_check CHECK (result <> 'SUCCESS' OR total_count > 0);
ALTER TABLE bit_report ADD CONSTRAINT bit_report_empty_check CHECK (result <> 'EMPTY' OR total_count = 0);
