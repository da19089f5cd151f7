-- The bit log, partitioned by month so that dropping a month of history is
-- dropping a partition (instant at any size) rather than deleting rows
-- (see millctl bitlog retention). A row's month (run_month) is its run's
-- month, read from the bitproducer run ID (the run's start, e.g.
-- 20260501T030000Z), so a run's rows stay in one partition and a redelivered
-- check replaces its row; a check outside any run takes the month it was
-- recorded in. The application creates each month's partition when it first
-- needs it (bit_log_yYYYYmMM).
--
-- Existing rows are copied into the new table in this transaction: on a
-- large bit log, run the migration in a quiet hour (or drop old history
-- first). The surrogate id column is gone: partitioned tables cannot have
-- one before PostgreSQL 17, and nothing reads it.
CREATE TABLE bit_log_by_month (
    run_month        date        NOT NULL DEFAULT date_trunc('month', now() AT TIME ZONE 'UTC')::date,
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
    CONSTRAINT bit_log_run_month_check CHECK (run_month = date_trunc('month', run_month)::date),
    -- One row per item per run (per month for checks outside a run); also
    -- the index for "every result of a run" and the report's count.
    CONSTRAINT bit_log_by_month_item_per_run PRIMARY KEY (run_id, account, store_id, space_id, content_id, run_month)
) PARTITION BY RANGE (run_month);

CREATE INDEX bit_log_by_month_run_result_idx ON bit_log_by_month (run_id, result);
CREATE INDEX bit_log_by_month_space_idx ON bit_log_by_month (account, store_id, space_id, content_id, checked_at DESC);
CREATE INDEX bit_log_by_month_problems_idx ON bit_log_by_month (checked_at DESC) WHERE result <> 'SUCCESS';

-- The month of a row of the old table, as the application computes it.
CREATE OR REPLACE FUNCTION pg_temp.bit_log_month(run_id text, checked_at timestamptz) RETURNS date
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN run_id ~ '^[1-9][0-9]{3}(0[1-9]|1[0-2])[0-9]{2}T[0-9]{6}Z$'
                THEN make_date(substr(run_id, 1, 4)::int, substr(run_id, 5, 2)::int, 1)
                ELSE date_trunc('month', checked_at AT TIME ZONE 'UTC')::date END
$$;

-- A partition for every month the old rows fall in, and for this month.
DO $$
DECLARE m date;
BEGIN
    FOR m IN SELECT DISTINCT pg_temp.bit_log_month(run_id, checked_at) FROM bit_log
             UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC')::date
    LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF bit_log_by_month FOR VALUES FROM (%L) TO (%L)',
            'bit_log_' || to_char(m, '"y"YYYY"m"MM'), m, (m + interval '1 month')::date);
    END LOOP;
END $$;

INSERT INTO bit_log_by_month (run_month, run_id, account, store_id, store_kind, space_id, content_id, result,
    case_number, content_checksum, storage_checksum, index_checksum, audit_checksum, details, checked_at)
SELECT pg_temp.bit_log_month(run_id, checked_at), run_id, account, store_id, store_kind, space_id, content_id, result,
    case_number, content_checksum, storage_checksum, index_checksum, audit_checksum, details, checked_at
FROM bit_log;

DROP FUNCTION pg_temp.bit_log_month(text, timestamptz);
DROP TABLE bit_log;
ALTER TABLE bit_log_by_month RENAME TO bit_log;
ALTER TABLE bit_log RENAME CONSTRAINT bit_log_by_month_item_per_run TO bit_log_item_per_run;
ALTER INDEX bit_log_by_month_run_result_idx RENAME TO bit_log_run_result_idx;
ALTER INDEX bit_log_by_month_space_idx RENAME TO bit_log_space_idx;
ALTER INDEX bit_log_by_month_problems_idx RENAME TO bit_log_problems_idx;

-- bit_log_ensure_month(m) makes the partitions of m's month and of the next
-- (the application calls it before a month's first write, so the month's
-- first rows never wait for DDL), under an advisory lock so two writers
-- never race the catalog.
CREATE FUNCTION bit_log_ensure_month(m date) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    mo date;
BEGIN
    PERFORM pg_advisory_xact_lock(1651078252, hashtext(coalesce(current_schema(), '')));
    FOREACH mo IN ARRAY ARRAY[date_trunc('month', m)::date, (date_trunc('month', m) + interval '1 month')::date] LOOP
        EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF bit_log FOR VALUES FROM (%L) TO (%L)',
            'bit_log_' || to_char(mo, '"y"YYYY"m"MM'), mo, (mo + interval '1 month')::date);
    END LOOP;
END $$;

-- bit_log_drop_months(before) drops, in one statement, the partitions of
-- the months that start before `before` and returns those months.
CREATE FUNCTION bit_log_drop_months(before date) RETURNS SETOF date LANGUAGE plpgsql AS $$
DECLARE
    months date[];
    names  text;
BEGIN
    SELECT array_agg(p.month ORDER BY p.month), string_agg(format('%I', p.relname), ', ')
    INTO months, names
    FROM (SELECT c.relname, make_date(substr(c.relname, 10, 4)::int, substr(c.relname, 15, 2)::int, 1) AS month
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'bit_log'::regclass AND c.relname ~ '^bit_log_y[0-9]{4}m(0[1-9]|1[0-2])$') p
    WHERE p.month < before;
    IF names IS NOT NULL THEN
        EXECUTE 'DROP TABLE ' || names;
    END IF;
    RETURN QUERY SELECT unnest(coalesce(months, '{}'::date[]));
END $$;
