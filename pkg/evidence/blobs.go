package evidence

import (
	"context"
	"fmt"

	"github.com/millfleet/mill/pkg/blob"
)

// A log keeps its tiles and checkpoints in a blob.Store, a flat namespace
// of keys ("tile/8/0/000", "checkpoint"): a dirblob.Store or an
// s3blob.Store, made with blob.Options.MaxSize MaxBlob. The log only adds
// and replaces blobs; it never deletes one.

// MaxBlob bounds the blobs a log reads: a data tile holds at most 256
// events of at most 16 KiB each (4 MiB); a larger blob is refused, so a
// hostile store cannot exhaust a verifier's memory one blob at a time (the
// store made with it as its bound never reads more than MaxBlob+1 bytes).
const MaxBlob = 5 << 20

// getBlob reads key from b, refusing a blob over MaxBlob also from a store
// made without that bound.
func getBlob(ctx context.Context, b blob.Store, key string) ([]byte, error) {
	data, err := b.Get(ctx, key)
	if err == nil && len(data) > MaxBlob {
		return nil, fmt.Errorf("evidence: blob %s: %w: over %d bytes", key, blob.ErrTooLarge, MaxBlob)
	}
	return data, err
}
