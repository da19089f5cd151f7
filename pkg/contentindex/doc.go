// Package contentindex is Mill's content index (docs/ARCHITECTURE.md, Audit
// and Data stores): what the mill believes each store holds — one row per
// item with its checksum, size, mimetype, properties, whether it is deleted
// and the time of the audit event that produced that state. The audit
// processor keeps it current; the bit check (its "I" checksum) and the report
// processor read it.
//
// Index is the interface; memcontentindex implements it in memory for unit
// tests and dev mode, pgcontentindex on PostgreSQL; contentindextest.Run is
// the conformance suite both pass.
//
// # Ordering rule
//
// Events may arrive out of order (SQS standard queues, retries). Every write
// carries the event's time, and a write older than the row's Modified time
// changes nothing. Deleted items keep their row (a tombstone) so a late,
// older ADD cannot resurrect them. At equal times the write that arrives
// last wins.
package contentindex
