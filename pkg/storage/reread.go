package storage

import (
	"context"
	"fmt"
	"io"
)

// A second read of an item, to tell a faulty read from a faulty copy: the
// bit check reads an item again before it records that its bytes
// disagree with their checksum. The second read must not meet the first
// one's fault again, so it goes over a new connection, and it must read
// the same bytes, so it is pinned to the revision the first read saw.

type newConnectionKey struct{}

// WithNewConnection returns a context whose reads go over connections
// opened for them alone: a provider that keeps connections (s3store's
// HTTP client) neither reuses an open one for a read under this context
// nor keeps the one it opens. Providers without connections (fsstore
// opens the file again) need do nothing.
func WithNewConnection(ctx context.Context) context.Context {
	return context.WithValue(ctx, newConnectionKey{}, true)
}

// NewConnection reports whether ctx asks for new connections
// (WithNewConnection).
func NewConnection(ctx context.Context) bool {
	v, _ := ctx.Value(newConnectionKey{}).(bool)
	return v
}

// Reopen opens an item to read it whole again: over new connections
// (WithNewConnection) and, when revision is not "", that revision only —
// ErrChanged when the item has been rewritten since (a RangeReader's
// reads are conditional on it; any other provider's Info.Revision is
// compared). The reader is Open's.
func Reopen(ctx context.Context, p Provider, space, id, revision string, t Transfer) (io.ReadCloser, *Info, error) {
	ctx = WithNewConnection(ctx)
	if _, ok := Unwrap(p).(RangeReader); ok && revision != "" {
		return OpenAt(ctx, p, space, id, 0, revision, t)
	}
	rc, info, err := Open(ctx, p, space, id, t)
	if err != nil {
		return nil, nil, err
	}
	if revision != "" && info.Revision != revision {
		rc.Close()
		return nil, nil, fmt.Errorf("storage: reopen %s/%s: %w: revision %s, expected %s", space, QuoteID(id), ErrChanged, info.Revision, revision)
	}
	return rc, info, nil
}
