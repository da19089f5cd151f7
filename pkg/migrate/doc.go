// Package migrate is the verified way out of a DuraCloud deployment: it
// copies the spaces of a DuraCloud store (an s3 store with the duracloud
// layout, pkg/storage/s3store) into a Mill store, verifying every copy,
// recording each as a replication, and reporting what moved, what differed
// and what was refused (millctl migrate duracloud).
//
// # What is trusted
//
// The two stores are the operator's (the store registry and the command
// line); nothing the migration reads — no message, no listing, no
// metadata — names a store or authorises a write. The source is only read.
// DuraCloud's recorded MD5 of an item is its ETag (DuraCloud writes every
// item with one PutObject): storage.ChecksumOf of the source's Head.
//
// # One item
//
// Plan decides from the two Heads, before any byte is read: an item with
// no recorded MD5 or whose bytes are archived is refused; one the
// destination already holds with DuraCloud's MD5 and size is skipped (a
// run before copied it: this is what makes a migration resumable, and a
// second run copy nothing twice); one the destination holds with other
// content is reported as differing and never overwritten; any other is
// copied. An item whose ID or properties the destination cannot hold
// (storage.ErrInvalidID, ErrInvalidProperty, ErrPropertiesTooLarge) is
// refused, not failed: a later run would fail the same way.
//
// A copy reads the source once (storage.Open: ranged reads of a large
// item), computing the MD5 and CRC-64/NVME of the bytes read (storage.Sums)
// while the destination's Put verifies DuraCloud's MD5 as it writes: bytes
// that do not match are committed nowhere and the item is reported
// corrupt. The copy is then read back from the destination (the provider
// itself, not through a cache or the audit wrapper) and Verify requires
// the bytes read back to have the length, MD5 and CRC-64/NVME of the bytes
// read at the source, and not to contradict the destination provider's own
// digest. A copy that does not verify is reported failed and removed
// (through the audited destination), so the next run copies it again
// rather than skipping it by the checksum its write recorded. The item's mimetype and user properties go with
// it; a space is created at the destination with the source's ACLs when
// the destination does not have it.
//
// # Recorded
//
// The destination is wrapped in the audited decorator with UserID
// (mill-migrate) and the source store's ID: every copy puts an AUDIT task
// naming the source store, the audit log records it, and the evidence
// appender (pkg/evidence/derive, Users.Migration) makes it a PREMIS
// replication event from the DuraCloud store when the evidence log exists.
//
// # Run in process
//
// A migration runs in the millctl process, a pool of Workers over the
// items of one space at a time, not as tasks through Workman: a DUP task
// must be authorised by a duplication policy from the source store, which
// would also set the dup producer sweeping the DuraCloud store and
// deleting at the destination what is gone from the source; a migration
// is a one-off that an operator runs and watches to its report, whose
// outcome per item must be counted by the process that verified it (a
// queue's redeliveries and dead letters would have to be reconciled into
// the report). Throughput scales with Workers (and, per large item, with
// the transfer's streams); several migrations of disjoint spaces can run
// at once.
//
// # Reports
//
// Every item is one Item: written as a row of the CSV report (CSV) as it
// is recorded, counted in the Summary, and kept in full in the JSON report
// when it was not copied or skipped.
package migrate
