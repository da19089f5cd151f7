-- Producer runs and the outcomes of their tasks (pkg/runs). A run is
-- written only by its producer (run_record); Workman records each task's
-- outcome against a recorded run (run_outcome, one row per task identity,
-- so a redelivered task counts once) and keeps the run's counts in the
-- same transaction. IDs compare byte-wise (COLLATE "C").
CREATE TABLE run_record (
    producer      text COLLATE "C" NOT NULL,
    run_id        text COLLATE "C" NOT NULL,
    scope         text        NOT NULL DEFAULT '',
    started_at    timestamptz NOT NULL,
    enqueued      bigint      NOT NULL DEFAULT 0,
    -- NULL while the producer queues the run's tasks.
    listed_at     timestamptz,
    done          bigint      NOT NULL DEFAULT 0,
    failed        bigint      NOT NULL DEFAULT 0,
    dead          bigint      NOT NULL DEFAULT 0,
    first_outcome timestamptz,
    last_outcome  timestamptz,
    completed_at  timestamptz,
    report        text        NOT NULL DEFAULT '',
    CONSTRAINT run_record_counts_check CHECK (enqueued >= 0 AND done >= 0 AND failed >= 0 AND dead >= 0),
    CONSTRAINT run_record_pkey PRIMARY KEY (producer, run_id)
);

CREATE INDEX run_record_started_idx ON run_record (started_at DESC);

CREATE TABLE run_outcome (
    producer   text COLLATE "C" NOT NULL,
    run_id     text COLLATE "C" NOT NULL,
    task_key   text COLLATE "C" NOT NULL,
    state      text        NOT NULL,
    task_type  text        NOT NULL DEFAULT '',
    item       text        NOT NULL DEFAULT '',
    reason     text        NOT NULL DEFAULT '',
    error      text        NOT NULL DEFAULT '',
    attempts   integer     NOT NULL DEFAULT 0,
    at         timestamptz NOT NULL,
    CONSTRAINT run_outcome_state_check CHECK (state IN ('done', 'failed', 'dead')),
    CONSTRAINT run_outcome_pkey PRIMARY KEY (producer, run_id, task_key),
    CONSTRAINT run_outcome_run_fkey FOREIGN KEY (producer, run_id)
        REFERENCES run_record (producer, run_id) ON DELETE CASCADE
);

-- A run's failures for its report.
CREATE INDEX run_outcome_failed_idx ON run_outcome (producer, run_id, state) WHERE state <> 'done';
