// Package configstore keeps Mill's configuration files (accounts.json,
// duplication-accounts.json, the duplication policies) as whole, versioned
// files with conditional writes, so that two editors cannot overwrite each
// other silently and every earlier version can be read back
// (docs/ARCHITECTURE.md, Console).
//
// Two implementations, one sub-package each, pass the conformance suite
// configstoretest.Run:
//
//   - s3configstore: the config bucket. Conditional writes are S3's own
//     (PutObject with If-Match: ETAG or If-None-Match: *, DeleteObject with
//     If-Match), so the check and the write are one atomic request; history
//     is the bucket's object versions (ListObjectVersions), and who made a
//     version travels as its user metadata.
//   - fsconfigstore: a local directory (the dev mode and tests). The
//     current file is a plain file under the directory, so policy.NewDir
//     and stores.LoadFile read it unchanged; every version is kept under
//     .history/. Conditions are checked under a lock held by this process
//     only.
package configstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors of every Store (test with errors.Is).
var (
	// ErrNotFound: the file (or the version) does not exist.
	ErrNotFound = errors.New("configstore: not found")
	// ErrConflict: the condition of a write did not hold — the file was
	// changed (or created, or deleted) since the caller read it.
	ErrConflict = errors.New("configstore: changed since it was read")
	// ErrTooLarge: a file is over Limits.MaxSize.
	ErrTooLarge = errors.New("configstore: file too large")
	// ErrInvalidName: a name that is not one plain file name.
	ErrInvalidName = errors.New("configstore: invalid file name")
)

// DefaultMaxSize is the largest file a Store reads or writes unless told
// otherwise: configuration files are small, and a huge one is a mistake or
// an attack, never something to load into memory.
const DefaultMaxSize = 4 << 20

// Cond is the condition of a write. The zero value writes unconditionally.
type Cond struct {
	// IfMatch, when set, lets the write happen only while the current
	// version's ETag is this one.
	IfMatch string
	// IfAbsent lets the write happen only while the file does not exist.
	IfAbsent bool
}

// Meta says who made a change and why; it is kept with the version it
// makes (where the store can: a delete marker in S3 carries none).
type Meta struct {
	// Author is the user ("alice@example.org"); "" when unknown.
	Author string
	// Action is a short description ("save", "restore of v3").
	Action string
}

// Version describes one version of a file.
type Version struct {
	// ID identifies the version for GetVersion ("null" for a file written
	// while an S3 bucket was unversioned).
	ID string
	// ETag is the content tag to pass as Cond.IfMatch; "" for a deletion.
	ETag string
	// Time is when the version was made.
	Time time.Time
	// Size in bytes (0 for a deletion).
	Size int64
	// Deleted marks a deletion (an S3 delete marker).
	Deleted bool
	// Current marks the newest version.
	Current bool
	// Meta as recorded with the version; empty when the store has none
	// (written by another tool, or a deletion in S3).
	Meta Meta
}

// File is the content of one version.
type File struct {
	Data    []byte
	Version Version
}

// Store is a set of named configuration files with versions.
//
// Contract (every implementation passes configstoretest.Run):
//
//   - Names are plain file names (no "/", "\", NUL, not "." or "..", not
//     starting with "."); anything else fails with ErrInvalidName.
//   - Get returns the current content and version, or ErrNotFound when
//     the file does not exist (never written, or deleted). A file over the
//     size limit fails with ErrTooLarge.
//   - Put writes data as a new current version when cond holds, else
//     fails with ErrConflict and changes nothing. With IfMatch, a file that
//     does not exist is a conflict; with IfAbsent, one that exists is. It
//     returns the new version (with its ETag); meta is kept with it.
//   - Delete removes the current file when cond holds (ErrConflict
//     otherwise); the versions before it stay readable. Deleting what does
//     not exist without a condition is success.
//   - History returns at most limit versions of the file, newest first,
//     including deletions; an empty list (no error) for a name never
//     written. GetVersion returns one of them (ErrNotFound for an unknown
//     id or a deletion).
//   - Safe for concurrent use; two conditional writes against the same
//     version cannot both succeed.
type Store interface {
	Get(ctx context.Context, name string) (*File, error)
	Put(ctx context.Context, name string, data []byte, cond Cond, meta Meta) (Version, error)
	Delete(ctx context.Context, name string, cond Cond, meta Meta) error
	History(ctx context.Context, name string, limit int) ([]Version, error)
	GetVersion(ctx context.Context, name, id string) (*File, error)
	// Where names a file for messages (s3://bucket/key or a path).
	Where(name string) string
}

// CheckName reports whether name is a plain file name (see Store).
func CheckName(name string) error {
	if name == "" || name == "." || name == ".." || strings.HasPrefix(name, ".") ||
		strings.ContainsAny(name, "/\\\x00") || len(name) > 255 {
		return fmt.Errorf("%w %q", ErrInvalidName, name)
	}
	return nil
}
