// Package s3store is a storage.Provider on Amazon S3 (aws-sdk-go-v2).
//
// # Key layout
//
// A store is a bucket and a key prefix (Config.Prefix, normally ending in
// '/', or empty for the whole bucket). With prefix P:
//
//	P<space>              space marker: JSON {"acls":{…}}; the space exists while it does
//	P<space>/<contentID>  a content item
//	P.mill-tmp/<random>   multipart uploads whose MD5 was not known up front
//	P.mill-trash/<space>/<sha256 of the content ID>/<time>-<random>.<reason>
//	                      what a delete or overwrite replaced, in a bucket without versioning
//
// The marker has no '/' after the space ID, so it can never be a content
// key (content IDs are non-empty) and never appears in a content listing.
// Space IDs cannot start with '.', so ".mill-tmp" and ".mill-trash" are
// never spaces: they appear in no listing, no producer's sweep and no bit
// check, and S3 events for their keys are ignored (pkg/s3event).
//
// # DuraCloud layout
//
// With Config.Layout LayoutDuraCloud the store reads and writes spaces as
// DuraCloud's S3StorageProvider keeps them, so DuraStore and the Java
// workers see what Mill writes and Mill sees theirs:
//
//	<account>.<space>     one bucket per space (account: Config.AccountPrefix,
//	                      lower-cased); an item's key is its content ID
//	Content-Type          the mimetype (DuraCloud's content-mimetype)
//	Content-Encoding      the property "Content-Encoding", as DuraCloud keeps it
//	ETag                  the MD5 (content-checksum): every item is one
//	                      single-part object of at most 5 GiB (ErrTooLarge)
//	x-amz-meta-<name>     a property: spaces in the name as "%20", the value
//	                      "UTF-8''" + its URL encoding (java.net.URLEncoder)
//	bucket tags           space-created, and the ACLs packed as DuraCloud
//	                      packs them: acl-user-read, acl-user-write,
//	                      acl-group-read, acl-group-write = "name:name:"
//	                      ('@' as '+'), for ACL names acl-<user> and
//	                      acl-group-<group> with rights READ and WRITE
//
// Space IDs follow DuraCloud's rules too (ValidateDuraCloudSpaceID), so
// the bucket name is the account prefix, a dot and the space ID
// unchanged, and only buckets so named are spaces. Names Mill cannot keep
// as given are refused with storage.ErrInvalidProperty: property names
// that are not lower-case ASCII header characters (S3 lower-cases
// metadata names) or that DuraCloud computes itself (content-size, …),
// ACL entries DuraCloud would drop or not read back. DuraCloud also reads
// a '*' after a name and a value without the RFC 5987 prefix; Mill writes neither
// (some S3-compatible services drop names with '*').
//
// Config.Bucket and Prefix then hold only the store's bookkeeping, never a
// space: trash copies (the layout always keeps them, whatever the space
// buckets' versioning), temporary uploads, and a claim per space Mill
// created (P.mill-spaces/<space>, written If-None-Match: * so concurrent
// creators agree on one). Content above Config.Threshold is uploaded in
// parts to P.mill-tmp/ and committed with one CopyObject, which gives the
// item a single-part ETag, its MD5.
//
// # Objects
//
// An item's MD5 (DuraCloud's checksum, lower-case hex) travels as user
// metadata "mill-md5"; its user properties as one metadata entry
// "mill-props" holding JSON with every non-ASCII character \u-escaped (so
// case, unicode and any key survive HTTP headers); its mimetype as
// Content-Type. S3 limits user metadata to 2 KB (keys plus values, UTF-8):
// a put or SetProperties that would exceed it fails with
// storage.ErrPropertiesTooLarge naming the size.
//
// # Provider checksums
//
// Content up to Config.Threshold is one PutObject sent with
// Content-MD5, so S3 verifies it and its ETag is the MD5: ProviderChecksum
// "md5:<etag>". Larger content is a multipart upload with S3 full-object
// CRC64NVME checksums (ChecksumAlgorithm CRC64NVME, ChecksumType
// FULL_OBJECT): ProviderChecksum "crc64nvme:<base64>" as S3 reports it. A
// multipart ETag is never taken for an MD5.
//
// S3 computes the ETag of whatever is written, by Mill or not, while
// "mill-md5" is whatever the writer sent: an object overwritten by another
// tool that kept the metadata has an ETag that contradicts its "mill-md5",
// and storage.ChecksumOf then takes the ETag and reports the claim as
// contradicted.
//
// # Memory
//
// Every put checks the MD5 itself before S3 commits anything, rather than
// rely on the server checking Content-MD5 (emulators such as moto 5.2 do
// not). So a single-part put buffers its content (at most
// Threshold bytes), checks it, and sends it with Content-MD5.
// Multipart uploads fill Streams reused buffers of PartSize bytes (shared
// by the process's transfers, storage.Parts), hashing MD5 and CRC64NVME
// in order, and complete the upload only when the MD5 matches. Get
// returns the response body as a stream and holds no buffer.
//
// The bound per setting: a put holds max(Streams·PartSize,
// Threshold) bytes of content, and a process doing one put or
// get peaks at that plus storage.MemoryConstMiB (storage.MemoryBound).
// With the defaults (4 streams of 8 MiB, threshold 16 MiB): 32 MiB of
// buffers, 92 MiB peak RSS; BenchmarkBigObject fails when a put and get
// of 1 GiB pass it. Each stream of 8 MiB more adds 8 MiB; 4 streams of
// 16 MiB peak at about 110 MiB.
//
// Get reports the object's checksums but does not let the SDK validate the
// body against them; callers check the bytes against Info.Checksum.
//
// A multipart put without an expected MD5 cannot write the "mill-md5"
// metadata when it starts, so it uploads to P.mill-tmp/ and commits with a
// server-side copy to the item's key, which then carries the MD5; pass
// PutOptions.Checksum to avoid the copy. A failed, cancelled or mismatched
// put aborts its multipart upload, so nothing is committed.
//
// # Recovery
//
// Store implements storage.Recoverer: what Delete, a Put or server-side
// copy over an existing item, SetProperties and Restore replace stays
// recoverable.
//
//   - In a versioned bucket S3 keeps it as a noncurrent version (a delete
//     adds a delete marker): no extra request and no copy. Versions lists
//     them with ListObjectVersions (IDs "version:<S3 version ID>"); how
//     long they are kept is the bucket's lifecycle rules'
//     (NoncurrentVersionExpiration; millctl setup reports it).
//   - Otherwise (versioning never enabled, or suspended) the object is
//     first copied server-side to P.mill-trash/… (IDs "trash:<name>"): one
//     CopyObject per delete, overwrite or property change, none for a first
//     write. A lifecycle rule that millctl setup adds expires them after
//     the retention (30 days by default).
//
// The store asks the bucket's versioning status (GetBucketVersioning) at
// most every five minutes; a caller denied that permission keeps trash
// copies, which is safe but dearer. Restore copies a version back over the
// item (server-side; UploadPartCopy above CopyThreshold). A delete of a
// missing item sends no request but its HEAD (in a versioned bucket it
// would add another delete marker). Without versioning a concurrent writer
// of the same key can slip a version between the copy and the write; with
// versioning S3 keeps every version.
//
// # Copies
//
// Store implements storage.ServerSideCopier for source stores that use the
// same *s3.Client: CopyObject up to Config.CopyThreshold (5 GiB, S3's
// limit), UploadPartCopy above it, keeping the MD5, properties and
// mimetype. SetProperties is a copy of the object onto itself.
//
// It is also a storage.SeenCopier, and Put takes PutOptions.Replaces: a
// caller that has just read the items (the duplication processor) passes
// them, and the store does not read them again. What it was given it uses
// only under a precondition: the copy from the source carries
// x-amz-copy-source-if-match with the source's ETag, the trash copy of
// the overwritten item the item's ETag, and a write over an item read as
// absent If-None-Match: * — S3 refuses a change since (412, or 409 for a
// concurrent conditional write: storage.ErrChanged). A single-part copy's
// result ETag is the MD5 of what S3 stored; it must equal the source's
// (else ErrChanged under a source precondition, ErrChecksumMismatch
// otherwise), so no HEAD follows it; a multipart copy is read back. An
// S3-compatible endpoint that ignores CopyObject's preconditions (moto
// does) is back to what the copy result shows.
package s3store
