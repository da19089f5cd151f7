// Package milldb is Mill's PostgreSQL access: a pgx/v5 connection pool with
// sane limits (Open) and the embedded, versioned schema migrations that create
// the content index, the bit log, the bit reports, the storage statistics
// and the producer runs (docs/ARCHITECTURE.md, Data stores). The code on
// those tables lives with its port: pkg/contentindex/pgcontentindex,
// pkg/bitlog/pgbitlog, pkg/spacestats/pgspacestats and pkg/runs/pgruns,
// each taking DB.Pool.
//
// Migrations live in migrations/ as NNN_name.up.sql and NNN_name.down.sql
// pairs, numbered from 001 without gaps. They are compiled into the binary;
// a badly named, unpaired, duplicated or missing file makes Migrations (and
// every function that migrates) fail rather than silently skip a step.
// Applied versions are recorded in the mill_migrations table. Each migration
// runs in its own transaction together with its tracking row, and a whole
// Migrate/Up/Down call holds a PostgreSQL advisory lock (keyed by the current
// schema), so two processes migrating the same database at once are safe:
// the second waits, then finds nothing left to do.
//
// Objects are created unqualified, in the first schema of the connection's
// search_path, so a database URL with search_path=... selects the schema.
//
// The package never reads the environment: callers pass the database URL.
package milldb
