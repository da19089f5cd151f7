// Package blob is Mill's port for small blobs: whole byte strings under
// slash-separated keys, read and written whole. The claim check keeps
// message bodies in it (pkg/queue/claimcheck), the looping producers their
// state (producers/looping), transfers their checkpoints (pkg/storage,
// Resume) and the evidence log its tiles and checkpoints (pkg/evidence).
//
// Store is the interface; each implementation is a sub-package: s3blob (an
// S3 bucket under a key prefix), dirblob (a filesystem directory) and
// memblob (memory, for tests and the dev mode). Package blobtest is the
// conformance suite every implementation runs.
//
// The contract, the same for every implementation:
//
//   - Put writes a blob whole, replacing any blob of that key: a reader
//     sees the old bytes or the new ones, never a part, also after a crash
//     (dirblob writes a temporary file, syncs it and renames it over the
//     key's file; an S3 PutObject is atomic).
//   - Get returns a copy of the bytes, or an error wrapping ErrNotFound.
//     A store made with a size bound refuses a larger blob with an error
//     wrapping ErrTooLarge, having read at most the bound plus one byte, so
//     a hostile store cannot exhaust a reader's memory.
//   - Delete removes the named blobs; a missing one is success.
//   - List returns the keys that begin with a prefix, sorted.
//
// Keys are checked (CheckKey): non-empty path elements of A-Z a-z 0-9 . _ -
// separated by "/", none "." or "..", at most MaxKeyLen bytes. Every
// operation refuses another key with an error wrapping ErrInvalidKey before
// touching anything, so a hostile key never names a file outside a
// directory store's root nor an object outside an S3 store's prefix; List
// leaves out whatever does not have such a key.
package blob
