// Package fixity measures fixity coverage (docs/ARCHITECTURE.md, Bit
// integrity): for every copy — a live row of the content index, one per
// (account, store, space, content id) — whether Mill made a fresh verdict on
// its bytes recently enough for the store's target (stores.Fixity).
//
// # What "covered" means
//
// A copy's verdict is the newest bit-log row of the copy, over every run,
// whose method observed the bytes (bitlog.Method.Fresh: read and hashed by
// the bit processor, or computed at rest by the provider) and that reached
// a result (SUCCESS or FAILURE; bitlog.Verdicts). A row that only compared
// stored checksums is not a verdict. Bit-log rows are written only by
// Mill's processors, from what they observed (a queue message names a copy
// to check; it carries no verdict), so a message cannot make a copy
// covered.
//
// A copy is within target when its verdict is younger than the store's
// interval for it: Fixity.ArchivedInterval when the verdict was made on an
// archived copy, Fixity.Interval otherwise. A copy is overdue when its
// verdict is that old or older, or when it has none (never verified: Mill
// knows a copy's storage class only from a check, so a never-verified copy
// is held to the readable interval's clock, which has already run out). An
// archived copy on a store whose ArchivedMethod is "none" is not covered: it
// is never within target and is counted apart from the overdue ones. A
// verdict of FAILURE is a fresh verdict (the copy was checked; its repair
// is the bit-error path's) and is counted in Failed too.
//
// So every copy is exactly one of within target, overdue or not covered.
//
// # How it is computed
//
// Compute streams a space's live content-index rows (contentindex.Index.List)
// and its verdicts (bitlog.Verdicts), both pages in ascending byte-wise
// content-id order, and merges them: memory is two pages whatever the size
// of the space. A verdict of a copy the index no longer lists (deleted) is
// skipped. Times come from a clock.Clock.
//
// Reports compute the coverage of several spaces and roll it up per store
// (Totals); Urgency orders spaces most overdue first, and Space.Covered
// tells whether every copy of a space stays within target for a margin
// (the bit producer's ordering and --skip-covered).
package fixity
