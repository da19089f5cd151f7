package bitreport

import (
	"context"
	"io"

	"github.com/millfleet/mill/pkg/bitlog"
)

// Reports stores report files: the writing half of a reportstore.Store
// (s3reportstore for the reports bucket, fsreportstore for the dev mode),
// whose contract Put follows.
type Reports interface {
	Put(ctx context.Context, key string, r io.ReadSeeker, size int64) (location string, err error)
}

// Published is told of each completed report (Config.Published): rep as
// the bit log holds it, and the account's admin-space copy (AdminSpaceID
// and its content ID; both "" when none was made).
type Published interface {
	ReportPublished(ctx context.Context, rep bitlog.Report, copySpace, copyID string) error
}
