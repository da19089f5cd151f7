// Package dup is the duplication task processor (docs/ARCHITECTURE.md,
// Duplication): it handles DUP tasks by making one item, or one space, of a
// destination store match the source store.
//
// # Authorised by configuration, not by the message
//
// A DUP task is a request, never an authority. Before any store is touched
// the processor checks the task: its space and content IDs must be valid
// for every provider (storage.ValidateSpaceID, ValidateContentID); the
// policies in force must allow the duplication (policy.Authorize: the
// account is listed in duplication-accounts.json and has a policy file, the
// space is not a system "x-" space nor in spacesToIgnore, and a store
// policy of the space goes from the task's source to its destination); and
// both stores must be registered. A task that fails a check is a permanent
// error (dead-lettered at once) whose text names the rule, for example
// "policy: no-store-policy: acme/photos: no store policy 2→1 (the space's
// store policies: 1→2)".
//
// Duplication never deletes from or overwrites a store that is the source
// of a store policy of the space (docs/ARCHITECTURE.md, Safety;
// policy.Policy.MayDestroy, rule "source-store"): in a chain 1→2→3, store 2
// only receives new items from store 1. Deletes and overwrites at a destination go through the ordinary
// provider calls (Delete, Put, SetProperties, SetSpaceACLs, DeleteSpace),
// so whatever makes them recoverable at the storage layer applies.
//
// # What a task does
//
// A content-level task (contentId set) reads the item from both stores:
//
//	source only                          → copy
//	both, not in sync (InSync, below)
//	or mimetypes differ                  → copy (as Java, which compares the
//	                                       content-mimetype property)
//	both, in sync, same mimetype,
//	user properties differ (system
//	properties ignored)                  → copy the properties
//	destination only                     → delete from the destination,
//	                                       unless the source store's content
//	                                       index still lists the item as live:
//	                                       then the content is missing from
//	                                       the source — an error (retried,
//	                                       then dead-lettered), never a delete;
//	                                       or unless the source space is gone
//	                                       and Mill did not put the item there
//	                                       (below)
//	neither                              → nothing
//
// Two copies are in sync (InSync) when they have the same checksum by the
// rule the bit check and the audit processor use (storage.ChecksumOf of
// each Head: the provider's own digest, an S3 single-part ETag, over the
// MD5 Mill recorded with the copy) and neither copy's recorded MD5 is
// contradicted by its provider: a copy whose bytes were replaced with its
// recorded MD5 kept is in sync with nothing. Such a destination is copied
// over; such a source is never copied from (ErrSourceCorrupt, permanent,
// nothing written; the bit check finds and repairs it).
//
// A space-level task (contentId empty) creates the destination space and
// copies the space ACLs when the source space exists, and deletes the
// destination space when the source space is gone and the destination space
// is empty (a non-empty one is left alone and logged; the dup producer
// queues the deletes of its items, and a later space task removes it) —
// if Mill created it (below).
//
// # Destination-only spaces
//
// A space that exists only at a destination (its source space is gone, or
// never was: a space a user made directly on a secondary store, one the
// Java Mill duplicated, one whose name a policy came to cover) is not
// Mill's to empty. There the processor deletes only what its own record
// shows its duplication put there: the audit log (Config.History), where
// every write of the processor is recorded, through the audited
// destination, with the user UserID. An item is deleted when its latest
// entry at the destination is a content write by UserID (an item a user
// wrote over Mill's copy since is not); the empty space is deleted when its
// latest CREATE_SPACE or DELETE_SPACE entry is a CREATE_SPACE by UserID.
// Anything else is left alone and logged (KeepDestinationOnly). The audit
// log rather than the content index: the index says what an item is, not
// who wrote it (DuraStore's, S3 events' and Mill's writes all make rows).
// The user of an entry is an AUDIT task's statement (docs/ARCHITECTURE.md,
// Safety: a belief), so a forged AUDIT naming UserID can at worst make an
// item of a destination-only space deletable — recoverably, as every
// delete at a destination. Without Config.History nothing of such a space
// is deleted.
//
// A destination space is created once however many tasks of a new space
// run at once: creations are single-flight per (account, store, space) in
// the process and look at the destination first, so CREATE_SPACE is
// audited once, not once per task.
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
// checksum must equal the source's.
//
// A request per need: the copy reuses the two HEADs the comparison made
// (storage.CopyOptions Source, Dest and DestRead) instead of reading
// either item again, and a store that takes them (storage.SeenCopier,
// PutOptions.Replaces: s3store) makes its writes conditional on them, so
// a change since the read fails the attempt (storage.ErrChanged; the
// task's retry compares afresh) rather than being copied from or over
// unseen. Against S3 a copy that differs then makes 4 HEADs: the source,
// the destination, the destination space's marker (a write needs its
// space) and the read-back. The read-back stays: it is the processor's
// own observation (docs/ARCHITECTURE.md, Safety) that the copy landed
// with the source's checksum, by the one rule (storage.ChecksumOf), not
// the store's answer to the write; a copy it contradicts fails the task
// (ErrDestinationChecksum). Transient provider errors are retried
// inside the processor with capped exponential backoff on the injected
// clock; storage.ErrNotFound is an answer, never retried. A source whose
// bytes do not match its recorded checksum is reported with a permanent
// error wrapping ErrSourceCorrupt (nothing is committed at the
// destination; the bit integrity check reports the sour content).
//
// # Memory
//
// A streamed copy holds Config.Transfer.Streams buffers of PartSize (the
// destination's multipart upload reads the source's ranges straight into
// them; the read-back check reuses them from storage's shared pool): with
// the defaults 4 of 8 MiB, 32 MiB per copy in flight. A process's peak is
// that per copy in flight plus storage.MemoryConstMiB, 92 MiB for one copy
// at the defaults (storage.MemoryBound); BenchmarkStreamingCopy1GiB fails
// when a 1 GiB copy passes it or 100 MiB.
//
// # Cold storage
//
// An item whose source copy is in an archival storage class (S3 Glacier
// Flexible Retrieval, Deep Archive, Intelligent-Tiering's archive tiers:
// storage.Info.Readable is false) cannot be read for a copy. Comparing it
// needs only Head, so an archived item the destination already matches, or
// whose properties alone differ, is handled as any other. When its bytes
// must be copied, nothing is written and the task is dead-lettered at once
// with ErrSourceArchived naming the item, its class and what to do. With
// Config.RestoreArchivedDays (workman --dup-restore-days) the processor
// first asks the source for a restored copy kept that many days (S3
// RestoreObject, Bulk tier; asking again while one is in progress is
// harmless); redriving the dead letter once the restore is done copies the
// item from the restored copy. A restored item, and GLACIER_IR, copy as
// usual.
package dup
