package objstore

import (
	"errors"
	"io"

	"github.com/millfleet/mill/pkg/storage"
)

// Page assembles one page of ListContent from the names a service lists
// in byte-wise order from the marker on (some services list the marker
// itself, or ignore it).
type Page struct {
	After string
	// Limit of IDs on the page (NewPage: storage.DefaultPageSize for 0
	// or less).
	Limit int
	IDs   []string
}

// NewPage starts the page after the marker after.
func NewPage(after string, limit int) *Page {
	if limit <= 0 {
		limit = storage.DefaultPageSize
	}
	return &Page{After: after, Limit: limit, IDs: []string{}}
}

// Add takes the next listed ID, skipping "" and IDs up to the marker;
// full reports that the page already held Limit IDs, so there are more
// and the listing stops.
func (p *Page) Add(id string) (full bool) {
	if id == "" || id <= p.After {
		return false
	}
	if len(p.IDs) == p.Limit {
		return true
	}
	p.IDs = append(p.IDs, id)
	return false
}

// GetCurrent reads a whole item with getRange (a GetRange of no
// revision), again when a rewrite between its reading the item's
// attributes and opening its bytes gave storage.ErrChanged: at most 20
// tries.
func GetCurrent(getRange func() (io.ReadCloser, *storage.Info, error)) (io.ReadCloser, *storage.Info, error) {
	for try := 0; ; try++ {
		rc, info, err := getRange()
		if try == 19 || !errors.Is(err, storage.ErrChanged) {
			return rc, info, err
		}
	}
}

// ClampRange fits a read of n bytes (n < 0: to the end) at off into an
// item of size bytes.
func ClampRange(off, n, size int64) (int64, int64) {
	if off > size {
		off = size
	}
	if n < 0 || off+n > size {
		n = size - off
	}
	return off, n
}
