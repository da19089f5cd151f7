// Package storage defines the storage provider interface Mill duplicates and
// checks content through, its portable errors and shared helpers.
// Implementations live in sub-packages: s3store (Amazon S3), fsstore (a local
// directory, for tests and the dev mode) and audited (a decorator that puts an
// AUDIT task on the audit queue for every successful write). storagetest is the
// conformance suite every provider passes.
//
// # An item's checksum
//
// Which checksum a copy of an item has is decided in one place,
// ChecksumOf, and every processor asks it (the bit check, the audit
// processor, duplication, the repair): the bytes as read and hashed beat
// the provider's own digest (Info.ProviderChecksum: an S3 single-part
// ETag; a full-object CRC-64/NVME only confirms or contradicts bytes
// read), which beats the MD5 Mill recorded with the copy (Info.Checksum:
// S3 metadata "mill-md5", the fs sidecar — a claim anyone who rewrites the
// object can keep; in DuraCloud's S3 layout the ETag is the only record,
// so there the claim is the provider's digest). A claim a stronger source contradicts means the copy
// is not the one Mill wrote (replaced or gone sour behind its back): such
// a copy holds nothing (CopyChecksum.Holds), is in sync with nothing and
// is never copied from.
package storage
