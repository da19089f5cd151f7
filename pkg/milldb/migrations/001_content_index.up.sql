-- The content index: what the mill believes each store holds, kept current by
-- the audit processor from audit events (docs/ARCHITECTURE.md, Audit and Data
-- stores). One row per item; deleted items keep their row (deleted = true) so
-- an older, late event cannot resurrect them.
CREATE TABLE content_index (
    account     text        NOT NULL,
    store_id    text        NOT NULL,
    space_id    text        NOT NULL,
    -- Byte-wise ordering (COLLATE "C") so keyset pagination over a space
    -- lists items in the same order as S3 and the storage providers.
    content_id  text COLLATE "C" NOT NULL,
    checksum    text,
    size        bigint      CHECK (size IS NULL OR size >= 0),
    mimetype    text,
    properties  jsonb       NOT NULL DEFAULT '{}'::jsonb,
    deleted     boolean     NOT NULL DEFAULT false,
    -- Time of the event that produced this state (the audit event's time);
    -- an event older than this is ignored.
    modified    timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    -- The primary key's index serves keyset pagination over one space:
    -- WHERE account=$1 AND store_id=$2 AND space_id=$3 AND content_id > $4
    -- ORDER BY content_id LIMIT n.
    CONSTRAINT content_index_pkey PRIMARY KEY (account, store_id, space_id, content_id),
    CONSTRAINT content_index_properties_object CHECK (jsonb_typeof(properties) = 'object')
);

-- Live items of a space, for the report processor's comparison with storage
-- without walking deleted rows.
CREATE INDEX content_index_live_idx
    ON content_index (account, store_id, space_id, content_id)
    WHERE NOT deleted;
