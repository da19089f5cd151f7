// Package deadletter is the dead-letter queue's message format and the
// operator's tools for it (docs/ARCHITECTURE.md, Dead letters).
//
// Workman writes a dead letter with Encode (or EncodeRaw when the envelope
// would be too large); Decode reads either form. The tools — scanning,
// listing, finding, redriving and purging — are used by `millctl dlq` and
// the console alike.
//
// # The format
//
// A Letter is a JSON envelope, version 1: the reason (failed, permanent,
// undecodable, unknown_type), the error (cut to 8 KiB), task type,
// processor, source queue, attempts, worker, time, message ID, receive
// count and the original body byte for byte (base64 when it is not UTF-8).
// The same metadata travels as mill-dlq-* message attributes, so tools can
// filter without parsing bodies. When the envelope would be too large, the
// original body itself is sent with the metadata only in the attributes
// (mill-dlq-form: raw). A message SQS's redrive policy moved to the queue
// is in neither form and is shown as such. The format is its own package so
// the tools need not import Workman.
//
// # Scans
//
// SQS cannot show a message without receiving it, so every operation of
// the Inspector is a scan: ReceiveWith with a short hold (30 s; the
// console's scans 2 min), the hold extended every half hold while the scan
// goes on (so a long scan does not see a message twice), everything
// released at the end (or by SQS after the hold if the process dies); a
// scan ends when a receive waiting 1 s brings nothing new. Meanwhile the
// held messages are invisible to other readers (Workman never reads this
// queue). The queue is opened behind the claim check, so bodies are
// resolved only from keys the claim check owns.
//
// Redrive sends the original body (attempts reset unless kept), then
// deletes: a crash duplicates, never loses. It sends only to Mill's work
// queues under the prefix — a letter naming any other queue (a forged
// envelope the SQS redrive policy moved here) is refused unless the
// operator names a target (Inspector.Target is that rule) — and never an
// unresolved claim-check reference. A filtered purge scans and deletes the
// matches after confirmation; an unfiltered one is Queue.Purge.
package deadletter
