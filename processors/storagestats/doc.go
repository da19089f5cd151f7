// Package storagestats is the STORAGE_STATS processor (docs/ARCHITECTURE.md,
// Storage statistics): it counts the items and bytes of one space from a
// listing of the space and records them in the statistics history
// (spacestats.Store, PostgreSQL's space_stats), one row per space per
// statistics run.
//
// The count streams the listing (storage.WalkEntries: S3's ListObjectsV2
// reports each object's size, so one request covers 1000 items), one page
// in memory whatever the size of the space. Items in archival storage
// classes count like any other: they are stored bytes. A space with more
// than Config.MaxItems items is counted by a chain of tasks: when a task has
// counted MaxItems it sends a continuation (the same task with the marker,
// the counts so far and when the count began) to Config.Continue and
// succeeds, so no task outlives Workman's per-type timeout and a failure
// repeats one part, not the whole count. The continuation's counts so far
// are a claim anyone who can send to its queue can make: with
// Config.Checkpoints set, the hand-on first saves them (keyed by run,
// account, store, space and marker) and a task carrying counts so far —
// a marker, items, bytes or a start — is counted on only when they are
// exactly the saved ones; otherwise it is refused, permanently, naming the
// rule (ErrNotHandedOn), and nothing is recorded.
//
// A space that does not exist (deleted since the producer listed it, or
// during the count) is recorded with 0 items and 0 bytes: it holds nothing,
// and the space's latest row must say so.
//
// Idempotent: the row's key is (run, account, store, space), so a
// redelivered task (or a repeated part of a chain) replaces its row. A task
// outside any producer run is given a run ID from when its count began.
// Unknown accounts and stores, invalid space IDs and malformed tasks are
// permanent errors.
//
// Register it in Workman's mux for task.TypeStorageStats:
//
//	p, err := storagestats.New(storagestats.Config{Stores: opener, Stats: pgspacestats.New(pool), Continue: bitQueue})
//	mux.Handle(task.TypeStorageStats, p)
package storagestats
