// Package s3event turns S3 event notifications into Mill items, so content
// written straight to a store's bucket (not through Mill) is audited too.
//
//   - Parse reads a notification body (pkg/task carries it in an AUDIT
//     task's "s3-event" property) into Records with decoded keys.
//   - A Resolver maps a bucket and key to the registered account, store,
//     space and content; RegistryResolver does it over pkg/stores'
//     registry (s3 stores: bucket + prefix; key = prefix + space + "/" +
//     content; in DuraCloud's layout bucket = account prefix + "." +
//     space, key = content). Keys that are not content — a space marker
//     (prefix + space), Mill's reserved ".…" keys, anything in a DuraCloud
//     store's own bucket — resolve to ErrIgnored; a bucket no store is
//     registered for to ErrUnknownBucket.
//   - Confirm checks a record against a HEAD of its object just made, so
//     that only events the store confirms are acted on: a removal needs a
//     404, a creation an object; an event the object changed after is
//     superseded (ErrSuperseded) whatever order the events arrive in, and
//     a removal of an object that exists and was not written since is
//     refused (ErrNotConfirmed).
//   - ConfigureBucketNotifications points a bucket's ObjectCreated:* and
//     ObjectRemoved:* notifications at the audit queue, and QueuePolicy is
//     the queue policy that lets S3 send them; `millctl setup` applies
//     both as setup resources (internal/ops/setup, NotificationResources).
package s3event
