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
