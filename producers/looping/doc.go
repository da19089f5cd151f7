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
// A concrete producer implements Producer (and optionally Deleter for a
// delete step that comes first in each morsel). It emits tasks; the
// framework sends them in batches of queue.MaxBatch, and saves the state
// only after a bite's tasks are all sent, so a crash (kill -9) at any point
// re-sends at most one bite and never skips one.
//
// State lives in a StateStore: a local file written atomically (temporary
// file, fsync, rename), an S3 object (s3://bucket/key) so containers can be
// replaced between invocations, or memory for tests.
package looping
