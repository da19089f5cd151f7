// Package looping is the framework both looping producers (dupproducer and
// bitproducer) are built on (docs/ARCHITECTURE.md, Looping producers).
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
