// Package reportstore keeps Mill's report files (the bit-integrity TSV
// reports, docs/ARCHITECTURE.md, Bit integrity): the bit report processor
// writes them and the console serves them back, each through the same Store.
//
// A report store is a few large files under slash-separated keys, written
// whole and never versioned, unlike the configuration files of configstore
// (small, flat names, conditional writes, history): the two are different
// concepts and stay apart.
//
// One implementation per sub-package, both held to reportstoretest.Run:
// s3reportstore (the reports bucket) and fsreportstore (a local directory,
// the dev mode).
package reportstore

import (
	"context"
	"errors"
	"io"
)

// ErrForeign: a report location outside the store's bucket (and prefix) or
// directory. Open reads nothing then, whatever the location came from.
var ErrForeign = errors.New("reportstore: report location outside the reports bucket or directory")

// Store keeps report files.
//
// Contract (reportstoretest.Run):
//
//   - Put stores the size bytes of r under key (a slash-separated relative
//     path such as "bit-integrity/acme/1/photos/20260101T000000Z.tsv"),
//     replacing what the key held, and returns the stored file's location
//     (s3://bucket/key or a file path). A failed Put leaves no partial file
//     under key.
//   - Open returns the content and size of the file at a location Put
//     returned, or an error wrapping ErrForeign for a location outside the
//     store (nothing is read then).
//   - Safe for concurrent use.
type Store interface {
	Put(ctx context.Context, key string, r io.ReadSeeker, size int64) (location string, err error)
	Open(ctx context.Context, location string) (io.ReadCloser, int64, error)
}
