// Package gcsstore is a storage.Provider on Google Cloud Storage, store
// kind "gcs", on GCS's JSON API through Google's generated REST client
// (google.golang.org/api/storage/v1), not cloud.google.com/go/storage:
// that library links gRPC, xDS and OpenTelemetry exporters into every Mill
// binary (about 220 packages, 28 MB of binary and 15 MiB of resident
// memory in each process, GCS store or not) for calls Mill makes over
// HTTP anyway. Client (NewClient) is the connection one or more stores
// share. Requests that are safe to send again are retried after a
// transient failure (see Retries); other writes are not (the task is).
//
// # Object layout
//
// A store is a bucket and a name prefix (Config.Prefix), laid out as
// s3store lays out a bucket without versioning:
//
//	P<space>              space marker: JSON {"acls":{…}}; the space exists while it does
//	                      (metadata "mill-write": its creator's random token, see Retries)
//	P<space>/<contentID>  a content item
//	P.mill-tmp/<random>   uploads whose MD5 was not known up front
//	P.mill-trash/<space>/<sha256 of the content ID>/<time>-<random>.<reason>
//	                      what a delete, overwrite or property change replaced
//
// Space IDs cannot start with '.', so neither .mill-tmp nor .mill-trash is
// ever a space. GCS lists names in byte-wise order, which is the order
// storage.Provider promises. A space is created with ifGenerationMatch=0,
// so exactly one of concurrent creators is told it created it.
//
// # Checksums
//
// An item's MD5 (DuraCloud's checksum) travels as custom metadata
// "mill-md5", its properties as JSON in "mill-props", Mill's CRC-64/NVME
// of the bytes it sent (when it knew it before committing) in
// "mill-crc64nvme", its mimetype as Content-Type. GCS limits custom
// metadata to 8 KiB: a larger set of properties is refused with
// storage.ErrPropertiesTooLarge.
//
// GCS computes an MD5 and a CRC32C of every object written in one piece
// (a composite object has only the CRC32C), whoever wrote it. Info's
// ProviderChecksum is that MD5 ("md5:<hex>"), so the bit check compares
// an MD5 with an MD5: an object rewritten behind Mill's back that kept
// "mill-md5" is told by the provider's MD5 contradicting the claim. The
// CRC32C (of the generation read, or the one GCS sends with the bytes
// when no attributes were read first) is checked by the store as the bytes
// of a whole read (Get, or a GetRange of all of the item) arrive: a read
// whose bytes disagree with it fails at its end. A transcoded read (an
// object stored gzip-encoded, served decoded) is not checked. Mill writes no
// composite objects; one written by another tool has no provider MD5 and
// is judged on its bytes.
//
// # Writes
//
// Every write is checked by Mill before GCS commits it, and declared to
// GCS so that GCS checks it too. Content up to Config.Threshold is
// buffered, hashed and sent in one request carrying its MD5. Larger
// content is a resumable upload (GCS's resumable upload protocol, in
// PartSize chunks, with the REST client's automatic retries of a
// chunk; a chunk is sent once whole or at the stream's end): with an expected MD5 the upload declares it and Mill checks its
// own hash of the stream before the last chunk leaves (a mismatch or a
// short stream abandons the upload: nothing is committed); without one
// the upload goes to .mill-tmp/ and is copied server side to the item
// with the MD5 Mill measured. GCS commits an object only when its upload
// finishes, so a failed or cancelled put leaves the previous version.
// Resuming an upload across processes (storage.PutOptions.Resume) is not
// implemented: a restarted copy uploads again.
//
// # Reads
//
// Info.Revision is the object's generation. GetRange reads that
// generation only; a rewritten item gives storage.ErrChanged. Get
// reads the attributes, then the bytes of that generation.
//
// # Recovery
//
// Store implements storage.Recoverer with trash copies: before a delete,
// an overwrite, a property change or a restore replaces an object, the
// generation it replaces is copied server side under .mill-trash/ with
// its metadata (one rewrite request; none for a first write). Versions
// lists them newest first (IDs "trash:<name>"); Restore copies one back.
// A bucket lifecycle rule on the .mill-trash/ prefix expires them after
// the retention (the operator's; see docs). Object versioning and soft
// delete of the bucket, where enabled, keep copies of their own and are
// not read: the trash works the same on every bucket and on the emulator.
// An item's one-request upload and its copy from .mill-tmp/ are
// conditional on the generation copied (Retries): a concurrent writer
// that slips a generation in between has it copied in turn before it is
// written over. A resumable upload straight to the item and a restore are
// not: without versioning such a generation can be lost.
//
// # Retries
//
// Following Google's retry strategy for Cloud Storage, a request that
// fails transiently (a 408, 429 or 5xx answer, a connection reset or
// timeout, a response cut short) is sent again only when doing so cannot
// leave another state than sending it once: up to 4 more times, waiting
// 200 ms then twice as long each time, while the context allows. Each
// request gcsstore makes is one of:
//
//   - idempotent, retried by the client's transport: attribute reads,
//     listings and downloads (GET), and the start of a resumable upload
//     session (a second session commits nothing; an unused one expires).
//     The chunks of a session, the last one included (the session
//     commits the object once), are retried by Google's REST client.
//   - conditionally idempotent, retried by the store's call, which reads
//     a refusal answering a retry (the earlier attempt may have been
//     applied, its answer lost) as what that attempt may have left.
//     Writes of an object: ifGenerationMatch of the generation read (0:
//     none). A space marker's creation and ACL rewrite carry a random
//     token in "mill-write": a 412 to a retry is success when the marker
//     holds this call's token; otherwise a creation reports "not
//     created", a rewrite reads the marker again and writes over it. An
//     item's one-request upload, or its copy from .mill-tmp/: a 412 to a
//     retry is success when the item is what was written (size, MD5,
//     metadata, type); otherwise another writer came first, whose
//     generation is kept recoverable, then written over (20 tries, the
//     last unconditional and sent once, so a put always wins). A
//     trash copy (a rewrite to a fresh random name, ifGenerationMatch=0):
//     a 412 to a retry is that copy. A property patch (ifGenerationMatch
//     and ifMetagenerationMatch of the state read): a 412 to a retry is
//     success when that generation holds the new metadata, else
//     storage.ErrChanged. A delete of a generation (an item's, a space
//     marker's, a temporary upload's, an undone trash copy's): a 404 to
//     a retry is success, so a delete keeps its trash copy.
//   - not idempotent, sent once: a restore's copy over the item
//     (unconditional), and a best-effort delete by name
//     whose generation is unknown (of a temporary upload that failed). A
//     transient failure fails the operation; Workman retries the task.
package gcsstore
