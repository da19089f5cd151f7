package bitreport

import (
	"context"
	"io"
)

// Reports stores report files: the writing half of a reportstore.Store
// (s3reportstore for the reports bucket, fsreportstore for the dev mode),
// whose contract Put follows.
type Reports interface {
	Put(ctx context.Context, key string, r io.ReadSeeker, size int64) (location string, err error)
}
