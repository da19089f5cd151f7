// Package audit is the AUDIT task processor (docs/ARCHITECTURE.md, Audit).
// For each audit event it does four steps, in order, each idempotent, so a
// retry simply repeats all of them:
//
//  1. write the audit log entry (auditlog.Log.Put; a redelivered event is
//     already there and is not written twice);
//  2. update the content index: ADD_CONTENT, COPY_CONTENT and
//     SET_CONTENT_PROPERTIES upsert the item, DELETE_CONTENT marks it
//     deleted, DELETE_SPACE marks every row of the space deleted (an event
//     older than the row changes nothing);
//  3. send one DUP task to the dup-high queue for every store policy in
//     force whose source is this store (content actions carry the content
//     ID, space actions an empty one), all in one Send — the policies in
//     force are policy.InForce's: the account must be listed in
//     duplication-accounts.json and have a policy file;
//  4. CREATE_SPACE: tell the Notifier (notify.SpaceCreated: an SNS topic in
//     production).
//
// Both Mill's JSON AUDIT tasks and DuraCloud's .properties ones decode to the
// same task.Audit and are processed alike.
//
// # Checked against the store
//
// Anyone who can send to the audit queue can make an AUDIT task, so before
// the steps the processor checks it with one read of the store
// (Config.Stores): a HEAD of the item for a content action, a read of the
// space for DELETE_SPACE and CREATE_SPACE. It is ErrNotConfirmed — a
// permanent error; nothing is recorded — when the store contradicts it: a
// DELETE_SPACE of a space that exists, a CREATE_SPACE of one that does not
// (it would be announced to operators), a DELETE_CONTENT of an item that
// exists and was surely written before the event, or a content write
// (ADD_CONTENT, COPY_CONTENT, SET_CONTENT_PROPERTIES) whose checksum is
// not that of an item surely written before the event. Two events are
// history only: recorded in the audit log (step 1), neither indexed nor
// duplicated, and logged with why —
//
//   - a DELETE_CONTENT of an item written again since (or in the event's
//     own second, on a store keeping whole seconds): the later write's own
//     task indexes and duplicates it, and no time a forger picks
//     tombstones an existing item;
//   - a content write of an item that is not in the store: written and
//     deleted again before this task (the delete's own task tombstones and
//     duplicates), or forged. Indexed, it would be a row for an item Mill
//     never saw, which a bit report reports missing and a repair brings
//     back from another store.
//
// A write of an item that is there is never superseded, even when the
// item was written after the event: the index orders events by time, its
// DUP tasks read the source, and a writer's clock may lag the store's.
// Other actions delete nothing and are taken as they say. A time later
// than now is taken as now.
//
// The item's checksum a write is checked against (and the one an S3
// event records) is its copy's by the rule the bit check and duplication
// use (storage.ChecksumOf, without reading): the provider's own digest
// (an S3 single-part ETag) over the MD5 Mill recorded with the copy. So a
// re-sync carrying the digest of a copy replaced with its "mill-md5"
// kept is confirmed, and a task repeating that stale claim is refused.
//
// # The source store: a claim
//
// An ADD_CONTENT or COPY_CONTENT of Mill's duplication or repair names
// the store it read the content from (task.KeySourceStoreID; the evidence
// log's source copy of a replication or repair). It travels in the AUDIT
// message, so it is recorded as the message says, a belief like the
// entry's user, and never checked against the stores' content. It is
// kept only when it names a store of the entry's account that the
// registry knows, other than the copy written; otherwise it is dropped
// (logged) and the rest of the task recorded. It authorises nothing: no
// step reads it (the DUP tasks come from the policies, the index from the
// entry's own copy).
//
// # S3 event notifications
//
// An AUDIT task carrying task.KeyS3Event (an S3 event notification received
// on the audit queue; see pkg/task) is expanded record by record: the
// bucket and key are resolved to a registered item (Config.Resolver), and
// the object is read by Head through the store's provider (Config.Stores).
// An event is acted on only when that HEAD confirms it (s3event.Confirm):
// anyone who can send to the audit queue can forge one. ObjectCreated
// becomes ADD_CONTENT with the checksum, size, mimetype and properties of
// the HEAD (never the event's); ObjectRemoved becomes DELETE_CONTENT only
// when the HEAD answers 404. Each then goes through the same four steps,
// with the event's time, or now if that is later (a forged future time
// would pin the content index row). An event the object changed after is
// skipped — a creation whose object is gone (its removal's event follows),
// a removal of an object written again since, or of a version that is not
// the current one — so the events of one key may arrive in any order. An
// ObjectRemoved event for an object that exists and was not written since
// is forged or mistaken: it is not acted on, and once the notification's
// other records are done the task is a permanent error ("s3event: not
// confirmed by HEAD", dead letter). Space markers and Mill's reserved keys
// are skipped; a bucket no store is registered for is a permanent error
// (dead letter). The user recorded is the event's principal marked as the
// event's unverified claim ("s3-event:AWS:…", s3event.Record.UserID): a
// forged event cannot attribute a write to a DuraStore user or to Mill.
//
// Echo rule: a write made through Mill's audited provider is audited by its
// own AUDIT task and also triggers a bucket notification. An S3 record is
// skipped (all four steps) when the item's latest audit entry is a different
// event that already says the same thing — for ObjectCreated a content write
// (ADD, COPY or SET_CONTENT_PROPERTIES) with the same non-empty checksum, for
// ObjectRemoved a DELETE_CONTENT — and is no older than the record's time
// minus Config.EchoWindow (default DefaultEchoWindow). A redelivery of the S3
// record itself (latest entry = the entry this record makes) is not an echo:
// it runs all four steps again, so a failed attempt is completed. If the S3
// record is processed before Mill's own AUDIT task, both are recorded (Mill's
// own tasks are never skipped).
package audit
