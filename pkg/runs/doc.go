// Package runs is the record of producer runs: every pass of a looping
// producer (dupproducer, bitproducer, statsproducer) is a run with an ID
// (its start, looping.State.RunID), its producer and scope, and the number
// of tasks it queued; every task it queues carries the run ID (the task
// property runId, task.KeyRunID, in both wire formats). Workman records
// each task's outcome against its run (done, failed and retrying,
// dead-lettered), so a run has live counts, a rate and an ETA (Status).
//
// Trust. Only producers make runs (Store.Start) and set their task counts;
// a task message can claim any run ID, so an outcome for a run no producer
// recorded is refused (ErrNoRun) and changes nothing, and only task types a
// producer queues count (ProducerOf: BIT_ERROR, AUDIT and NOOP never do).
// Outcomes are keyed by the task's identity (TaskKey: a hash of its type
// and properties, not its attempts nor IgnoredProps), so a redelivered
// message, a retry, a re-queued copy and a task queued twice after a
// producer crash count once; a final outcome (done, dead) is never
// replaced by a stale copy's. A success that queued a continuation of its
// task (processors.Continue: the bit report waiting for results) is no
// outcome: the continuation brings it. Tasks of an at-rest checksum job
// (BIT with atRestJob) are queued outside the run's bites and not counted.
//
// A run is finished when its producer has listed it (every task queued)
// and every queued task has a final outcome. Recorder then writes its
// completion report (JSON and CSV in the reports store under runs/), marks
// it completed (once, however many Workmen see it finish) and notifies.
// The report carries the run's cost in requests and dollars, counted
// (Report.Cost, CountedCost): every AWS request the run's task attempts
// made, by service and operation, as Workman counted them in the SDK
// (pkg/awsconfig's middleware, each answered HTTP attempt, retries
// included, into the attempt's pricing.Counter; never from the message),
// recorded with each outcome (Outcome.Requests, summed into the run in
// the write that records the outcome; an attempt that continued its task
// has no outcome: Recorder.Continued adds its requests alone, best
// effort) — plus each attempt's share of
// the producer's enqueue and of Workman's receive and delete, batched
// across tasks and runs and so apportioned at the per-task rates make
// bench measures (the "(share)" lines). Not counted: stores outside AWS
// (fs, GCS, Azure), attempts released unfinished (an outage, throttling,
// shutdown) or killed, Workman's sends of retries and dead letters,
// PostgreSQL, and requests recorded after the report was made (a stale
// copy's). Beside it, for comparison and for
// what the count cannot see, the estimate (Report.Estimate, Estimate):
// each attempt of a task (Store.Attempts, by type) at its type's
// documented request list (pkg/pricing's TaskRequests, the case marked
// estimate, which an end-to-end test counts at a proxy;
// docs/CAPACITY.md); a DUP there counts as a copy already in step. Both
// are priced with the Recorder's table (Workman's --price-table;
// pkg/pricing's default otherwise).
//
// One implementation per sub-package, both held to runstest.Run: pgruns
// (PostgreSQL, milldb migration NNN_runs) and memruns (unit tests, dev mode).
package runs
