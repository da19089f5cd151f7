// Package claimcheck is a queue.Queue decorator that moves large message
// bodies out of the queue into blob storage (the claim-check pattern), so
// tasks bigger than SQS's message limit travel transparently.
//
// Wire format: a body longer than Config.Threshold is stored as a blob under
// Config.KeyPrefix + a random ID; the queued message carries the blob key in
// the message attribute AttrRef ("MillClaimCheck") and, as its body, a small
// JSON reference for people and tools that look at the queue:
//
//	{"millClaimCheck":{"key":"claims/…","size":1048576,"sha256":"…"}}
//
// The attribute, not the body, marks a reference, so an ordinary JSON body can
// never be mistaken for one. Anything that copies messages between queues
// (dead-letter redrive) must copy attributes too.
//
// Receive replaces each reference with the stored body (checking size and
// SHA-256) and keeps AttrRef on the message. When the blob cannot be read or
// does not match, the message is still returned — with the reference as its
// body and the verdict in queue.Message.Unresolved, an error wrapping
// ErrBlobNotFound, ErrBlobUnavailable or ErrUnresolved (Unresolved(m)
// returns it) — so the consumer can dead-letter it rather than have it
// redelivered forever. Attribute AttrError repeats the cause as text for
// people and tools; consumers read the typed verdict, which no sender can
// forge. An AttrError that arrives with a message is dropped.
//
// Confinement (docs/ARCHITECTURE.md, Safety): the decorator reads only
// blobs whose key has exactly the shape Send creates — Config.KeyPrefix and 32 lower-case hex
// digits (Queue.Owns). A reference naming any other key (another object of
// the claims bucket such as the producers' state files, an empty key, a
// path with "..", another prefix or bucket) is refused without reading or
// deleting anything: the message is returned marked with an error wrapping
// ErrRefused that names the broken rule ("claimcheck: key outside claims
// prefix"), and deleting the message leaves the named object alone.
//
// Delete deletes the message and never its blob: the claims bucket's expiry
// rule removes blobs after every queue's retention. A key is no secret to
// whoever can read the queue, so a reference copied into a forged message
// would otherwise delete the original message's body with the copy; and SQS
// may deliver a message again after a delete (a stale receipt handle), which
// then still finds its body. A blob whose reference could not be sent is
// deleted again at once (best effort): no message names it.
//
// The blobs are kept in a blob.Store (pkg/blob): s3blob in Mill's state
// bucket, memblob in tests and the dev mode.
package claimcheck
