// Package dup is the duplication task processor (docs/ARCHITECTURE.md,
// Duplication): it handles DUP tasks by making one item, or one space, of a
// destination store match the source store.
//
// A content-level task (contentId set) reads the item from both stores:
//
//	source only                          → copy
//	both, checksums differ               → copy
//	both, same checksum, user properties
//	differ (system properties ignored)   → copy the properties
//	destination only                     → delete from the destination,
//	                                       unless the source store's content
//	                                       index still lists the item as live:
//	                                       then the content is missing from
//	                                       the source — an error (retried,
//	                                       then dead-lettered), never a delete
//	neither                              → nothing
//
// A space-level task (contentId empty) creates the destination space and
// copies the space ACLs when the source space exists, and deletes the
// destination space when the source space is gone and the destination space
// is empty (a non-empty one is left alone and logged).
//
// The source is only ever reached through a read-only view (ReadOnly): no
// code path of the processor can write to it. Destination writes go through
// the injected audit wrapper (normally the audited decorator), so each one
// puts an AUDIT task on the audit queue.
//
// Copies go through storage.Copy: server-side when the destination can copy
// from the source (two S3 stores on one client), otherwise streamed end to
// end with no local staging, the destination verifying the source's MD5
// while it writes; after every copy the destination is read back and its
// checksum must equal the source's. Transient provider errors are retried
// inside the processor with capped exponential backoff on the injected
// clock; storage.ErrNotFound is an answer, never retried. A source whose
// bytes do not match its recorded checksum is reported with a permanent
// error wrapping ErrSourceCorrupt (nothing is committed at the
// destination; the bit integrity check reports the sour content).
package dup
