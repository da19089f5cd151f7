-- The bit producer's record of its at-rest checksum jobs (docs/ARCHITECTURE.md,
-- Cold copies): written only by bitproducer. A run makes at most one job per
-- space: the space's archived objects are recorded while it is listed
-- (state 'listing'), the job is created when the listing ends ('submitted',
-- job_id), its completion report is stored object by object ('ingested'),
-- then one BIT task per object is queued ('queued'); a job that failed or
-- was cancelled ends 'failed' with the provider's reason. The bit processor
-- uses a computed checksum only when this record says the task's job is the
-- run's job for the space, ingested, with a result for the item: a queue
-- message cannot write here. IDs compare byte-wise (COLLATE "C").
CREATE TABLE bit_at_rest_job (
    run_id       text COLLATE "C" NOT NULL,
    account      text COLLATE "C" NOT NULL,
    store_id     text COLLATE "C" NOT NULL,
    space_id     text COLLATE "C" NOT NULL,
    job_id       text COLLATE "C" NOT NULL DEFAULT '',
    state        text NOT NULL DEFAULT 'listing',
    objects      bigint NOT NULL DEFAULT 0,
    reason       text NOT NULL DEFAULT '',
    submitted_at timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT bit_at_rest_job_state_check CHECK (state IN ('listing', 'submitted', 'ingested', 'queued', 'failed')),
    CONSTRAINT bit_at_rest_job_objects_check CHECK (objects >= 0),
    CONSTRAINT bit_at_rest_job_id_check CHECK (state = 'listing' OR job_id <> ''),
    CONSTRAINT bit_at_rest_job_per_run PRIMARY KEY (run_id, account, store_id, space_id)
);
CREATE INDEX bit_at_rest_job_open ON bit_at_rest_job (submitted_at) WHERE state IN ('submitted', 'ingested');

-- The objects of each job: as listed, then their line of the completion
-- report (reported; ok with the computed MD5, or the provider's error).
CREATE TABLE bit_at_rest_object (
    run_id        text COLLATE "C" NOT NULL,
    account       text COLLATE "C" NOT NULL,
    store_id      text COLLATE "C" NOT NULL,
    space_id      text COLLATE "C" NOT NULL,
    content_id    text COLLATE "C" NOT NULL,
    size          bigint NOT NULL DEFAULT 0,
    storage_class text NOT NULL DEFAULT '',
    reported      boolean NOT NULL DEFAULT false,
    ok            boolean NOT NULL DEFAULT false,
    checksum      text NOT NULL DEFAULT '',
    error         text NOT NULL DEFAULT '',
    CONSTRAINT bit_at_rest_object_size_check CHECK (size >= 0),
    CONSTRAINT bit_at_rest_object_per_job PRIMARY KEY (run_id, account, store_id, space_id, content_id),
    CONSTRAINT bit_at_rest_object_job FOREIGN KEY (run_id, account, store_id, space_id)
        REFERENCES bit_at_rest_job ON DELETE CASCADE
);
