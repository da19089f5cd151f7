// Package bitreport is the BIT_REPORT processor (docs/ARCHITECTURE.md, Bit
// integrity): it writes the bit-integrity report of one space for one
// bitproducer run.
//
// The processor observes, never believes: the run and the number of items
// to wait for are the bit producer's record of the run (bitlog.Runs, which
// only the producer writes), and the verdict is what the bit log rows of
// the run say. The task's "expected" is a hint (logged when it differs);
// its "rechecks" count is for the logs.
//
// Procedure, all steps idempotent (a redelivered report repeats them and
// replaces its file and its bit_report row):
//
//  0. Refuse, with a permanent error naming the rule (Workman dead-letters
//     the task) and without writing or telling anything, a report of a
//     run the producer did not record for the space (ErrUnrecordedRun), of
//     a listing the producer has not finished (ErrListing; its own report
//     is queued only after it has), or with an expected count but no run
//     (ErrNoRun). A report with no run at all is the Java Mill's (see
//     Java-shaped reports below).
//  1. Wait for the space: until the bit log holds a result for as many
//     items of the space in the run as the producer recorded listing, the
//     report is looked at again after RecheckDelay — re-sent on
//     Config.Requeue without using up an attempt, or, without a Requeue
//     queue, through processors.RetryAfter. Spaces are reported as soon as
//     they are complete, not when the whole bit queue drains. Through
//     Requeue, MaxRechecks × RecheckDelay after the producer's recorded end
//     of the listing, the space is reported with what the log holds. A
//     check Workman dead-lettered does not hold the report: Workman's
//     OnDeadLetter hook (DeadLettered, deadletter.go) records it as an
//     ERROR row saying so, which counts toward completeness, is a line of
//     the report and makes it notified; a redriven check replaces it.
//  2. Compare: the space's storage listing, its live content index rows and
//     the run's bit log rows are merged in content ID order (constant
//     memory). An item in storage but missing from the index becomes an
//     ERROR row, unless the bit check already recorded a FAILURE or ERROR
//     for it. An item in the index but missing from storage (and without
//     such a row) is looked at again (bit.Observer); still missing, it is,
//     as in the Java Mill, reported only when missing in two consecutive
//     runs: the first time it is marked in the content index with the run
//     (MissingRun) and left out of the report; in a later run it becomes
//     an ERROR row (case 8) and a BIT_ERROR on Config.BitErrorQueue, so
//     the bit-error processor repairs it from a good copy like any other
//     case 8. An item found in storage again loses its mark.
//     A case-11 row (an item deleted after the producer listed it) counts
//     toward completeness in step 1 but is not a line of the report, nor
//     counted in it.
//  3. Write the TSV report (Header, then one Line per item with a row) to
//     Reports under bit-integrity/{account}/{store}/{space}/{run}.tsv —
//     a reportstore.Store: s3reportstore for the reports bucket,
//     fsreportstore for the dev mode. Each line ends with the verdict's
//     method, bytes hashed and archived flag. Beside it, under the same
//     key with ".cost.json" for ".tsv" (CostKey), the run's estimated
//     cost: the rows counted by method (read: ranged GETs and bytes;
//     at-rest: Batch Operations jobs, objects and GB; stored: a HEAD
//     each) and priced with Config.Prices (pkg/pricing: an estimate from
//     the table, labelled with it and its date), with what restoring the
//     archived copies would have cost, for comparison. A store outside
//     AWS (gcs, azure) is priced at its provider's prices
//     (pricing.Table.EstimateFor): every byte read is that provider's
//     internet egress (egressUSD), beside what a Workman inside that
//     cloud would have paid (readInsideProviderUSD).
//  4. Record the bit_report row: result FAILURE when any item failed,
//     else ERROR when any item is in error (or the space never completed),
//     else SUCCESS; the counts; the report's location. A run that checked
//     nothing (no row to report: an empty space, or its items missing
//     for the first time or deleted since) is not a SUCCESS but EMPTY
//     (bitlog.ResultEmpty): the file has no line, and nobody is notified.
//     Only FAILURE and ERROR reports are notified. Config.Published, when
//     set, is told of the report after the bit log has it (pkg/duradb:
//     DuraCloud's bit_report row, naming the admin copy when one is made).
//
// # Java-shaped reports
//
// The Java Mill's bit producer queues a BIT_REPORT of a space (account,
// store, space, nothing else) once its BIT tasks have drained, and the Java
// report is of the bit checks of the space made since. Mill gives that
// shape the same meaning within its own records: it reports the space's
// rows made outside any producer run (run ID "": what Workman records for
// the Java producer's BIT tasks, which have no run), through steps 2 to 4
// without waiting, and never as a silent SUCCESS: an item in storage and
// in the index without such a row is an ERROR row ("no bit check result
// outside a bit producer run"), so the report is a SUCCESS only when Mill
// observed every item of the space healthy. Each line carries its check's
// date. The report's bit_report row has run ID "" (the latest Java-shaped
// report of the space replaces the previous one; its file is kept under
// its time), the producer's --skip-recent never trusts it (no run record),
// and an item missing from storage is marked with JavaMissingMark and
// the report's time, so the next Java-shaped report reports it.
//
// Register it in Workman's mux for task.TypeBitReport:
//
//	p, err := bitreport.New(bitreport.Config{Stores: opener, Index: index,
//		BitLog: bitLog, Reports: s3reportstore.Store{Client: s3c, Bucket: "mill-reports"},
//		Observer: observer, BitErrorQueue: bitErrorQueue, Requeue: bitReportQueue})
//	mux.Register(task.TypeBitReport, p)
package bitreport
