// Package looping is the framework the looping producers (dupproducer,
// bitproducer and statsproducer) are built on (docs/ARCHITECTURE.md,
// Looping producers).
//
// A run is one complete pass over a list of morsels (one morsel per unit
// of work: a store policy for duplication, a space for bit integrity). A run
// usually spans several invocations: each invocation (Loop.Run) takes the
// producer's lease, loads the saved State, and nibbles the morsels one bite
// at a time, interleaved in their listed order (A, B, C, A, B, C, …) so no
// single large morsel monopolises the queue. Before each bite it checks the
// queue's visible depth and stops, saving the state, when the queue is full;
// the next invocation resumes exactly there. When every morsel is done the
// run is complete and the next one is due at the run's start + Frequency.
// With a start time of day (StartAt, --start-at) a run begins only at the
// start time of the day it is due, or within StartWindow after it, so a
// monthly run starts at night whenever the scheduler invokes the producer.
// A producer may leave morsels out of a run with a reason (Morsel.Skipped);
// the summary lists them. A completed run and a failed invocation are
// announced to the Notifier (pkg/notify).
//
// Failures are isolated. A step of a morsel whose producer call fails (a
// store that cannot be opened, a space that cannot be listed) is retried at
// the morsel's next turn; after Config.MorselAttempts failures in a row the
// morsel is given up for the run (Morsel.Failed) and the others go on. A
// producer may list a morsel already failed (a part of the sweep it could
// not list). Failed morsels are in the summary, the log line
// (morsels_failed, morsels_failed_now) and the notification
// (producer-morsels-failed, or the completion's), Summary.HasFailures is
// set (the commands exit 3), and the next run lists them again. What every
// morsel shares fails the invocation instead, and the next one resumes: the
// queue, the state store, the lease, a cancelled context.
//
// A concrete producer implements Producer (and optionally Deleter for a
// delete step that comes first in each morsel). It emits tasks; the
// framework sends them in batches of queue.MaxBatch, up to
// Config.SendsInFlight batches at once (default 32: a bite's round trips
// overlap), counts a batch when the queue acknowledges it, and saves the
// state only after every batch of a bite is acknowledged, so a crash
// (kill -9) at any point re-sends at most one bite and never skips one.
//
// Every task the framework sends carries the run's ID (task property runId,
// set when the producer did not). With Config.Runs, each run is recorded in
// the fleet's record of runs (pkg/runs) before its first bite, with its
// task count after each step and its final count when the last morsel is
// done, so Workman can count the run's outcomes (RunRecorder).
//
// State lives in a StateStore on a blob store (pkg/blob): local files
// written atomically (dirblob: temporary file, fsync, rename), S3 objects
// (s3blob, s3://bucket/key) so containers can be replaced between
// invocations, or memory for tests (memblob); the file name or S3 key must
// be a blob key. Each keeps a base (the
// whole state) and a journal of the changes since (journal.go), so a save
// writes what the bite changed, not the whole state: one atomic write per
// save, a new base when the run's morsels change, when the journal would
// outgrow the base (amortised O(change)) or reach its entry cap (1000, or
// one per 256 bytes of a larger base, so that the cap's compactions stay
// proportional to the change too), and the old entries deleted then.
package looping
