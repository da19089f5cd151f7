// Package bit is the bit-integrity looping producer (docs/ARCHITECTURE.md,
// Bit integrity and Looping producers): it walks accounts → stores → spaces,
// filtered by inclusion and exclusion files (ParseFilter), and queues one BIT
// task per content item — 1000 per bite, interleaved across spaces by the
// looping framework, while the bit queue is under its maximum size — and,
// once a space's listing is complete, one BIT_REPORT on the bit-report queue
// carrying the run ID (and the number of items listed, as a hint).
//
// The producer records each space of its run in the bit log (bitlog.Runs):
// on the space's first bite, and with the number of items listed on the
// bite that finishes the listing, before that bite queues the BIT_REPORT.
// Only the producer writes this record; the report processor makes a report
// only for a run recorded there, and waits for the recorded count. With
// Config.SkipRecent, a space is skipped only when its latest report is a
// recent SUCCESS of a run the producer recorded for it that covered every
// item listed (and more than none); a report of any other run (one made
// before the record existed included) is not trusted.
//
// With Config.Coverage (cmd/bitproducer always sets it) a run starts by
// measuring the fixity coverage of every space (pkg/fixity: the content
// index merged with the bit log's latest fresh verdicts, which only Mill's
// processors record, from what they observed, so no message can make a
// copy covered). It logs each store's figures ("fixity coverage", the
// overdue-copies metric) and orders the spaces most overdue first:
// never-verified or unindexed spaces, then by how late their worst copy
// is, then by how soon their first copy falls due (ties in registry
// order). With SkipCovered (--skip-covered MARGIN) a space is skipped when
// every copy is within target and stays so for CoveredMargin; a space
// whose index lists no copy is never skipped. SkipRecent cannot come with
// it (New refuses the pair). In a space that is checked,
// SkipCovered queues only the copies that are due — no fresh verdict
// made before the run started, or one that falls out of target (the
// archived interval for a copy its verdict says was archived) within the
// margin — so an overdue copy is checked at once, alone when it is the
// only one: each bite merges its page of the listing with the space's
// verdicts (Config.Verdicts), both in byte-wise content-id order, in
// bounded memory (due.go). A copy within target gets no BIT and is not
// put in an at-rest job; the run record and the BIT_REPORT count the
// items queued. Skipping never hides a copy for long: it is queued as
// soon as it would fall due within the margin.
//
// A store's sampleRate (stores.Fixity) below 1 checks (by a BIT, or at
// rest) only the copies fixity.Sampled picks (a hash of the run ID and the copy, so a
// bite sent again queues the same ones and the next run others); the run
// record and the BIT_REPORT count the items queued. SkipRecent never skips
// a space of a sampled store (no run checked the whole space), and cannot
// be combined with SkipCovered (whose runs check only the due copies). Coverage is not sampled: the
// copies a run left out age like any other and come due.
//
// With Config.AtRest, the archived items of stores whose archived method is
// compute-checksum are checked at rest instead: one at-rest checksum job
// per space and run, followed by Follow on every invocation, which queues
// one BIT task naming the job per object once its report is in the bit log
// (see atrest.go and docs/ARCHITECTURE.md, Cold storage).
//
// With Config.Restore, an archived item of a store whose archived method
// is restore, in the run's sample and not readable now, gets a restore
// request (storage.Restorer: Restore.Days, Restore.Tier) instead of a BIT
// task and is not counted in the run's record or report: it is checked by
// a later run, which finds it restored and queues an ordinary BIT (read
// and hashed). The restore state comes from the listing when the provider
// reports it (S3's RestoreStatus attribute), else from a Head after a
// request that answers "asked already". A request that fails leaves the
// copy due (coverage shows it). The log names each space's restores
// requested, pending and failed (see restore.go).
//
// Wiring (what cmd/bitproducer does):
//
//	p, _ := bit.New(bit.Config{Registry: reg, Opener: opener, Filter: f, BitLog: pgbitlog.New(pool)})
//	loop, _ := looping.New(looping.Config{
//		Kind:     bit.Kind,
//		Producer: p,
//		Queue:    &bit.Router{Bit: bitQueue, Report: reportQueue},
//		State:    state, Lease: lease, Frequency: freq,
//	})
//	sum, err := loop.Run(ctx)
package bit
