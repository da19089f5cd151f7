package evidence

import (
	"context"
	"errors"
	"fmt"

	"github.com/millfleet/mill/pkg/blob"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// errStop ends Events early without an error.
var errStop = errors.New("stop")

// Events reads the log up to its latest checkpoint (checked with v) and
// calls fn with each event in log order. Every data tile's leaves are
// checked against the signed tree (their hashes against the hash tiles,
// which tlog checks up to the checkpoint's root) before fn sees them, so
// an event Events returns is one the checkpoint signed. It returns the
// checkpoint; an error of fn ends the read with that error.
func Events(ctx context.Context, blobs blob.Store, v note.Verifier, fn func(index int64, e *Event) error) (*Checkpoint, error) {
	msg, err := getBlob(ctx, blobs, latestKey)
	if err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	cp, err := OpenCheckpoint(msg, v)
	if err != nil {
		return nil, fmt.Errorf("evidence: %s: %w", latestKey, err)
	}
	hr := tlog.TileHashReader(cp.Tree(), &tileReader{blobs: blobs, ctx: ctx})
	for start := int64(0); start < cp.Size; start += 1 << TileHeight {
		t := dataTile(start, cp.Size)
		leaves, err := readDataTile(ctx, blobs, t)
		if err != nil {
			return nil, err
		}
		idx := make([]int64, len(leaves))
		for i := range leaves {
			idx[i] = tlog.StoredHashIndex(0, start+int64(i))
		}
		hashes, err := hr.ReadHashes(idx)
		if err != nil {
			return nil, fmt.Errorf("evidence: the hash tiles of %s do not match checkpoint %d: %w", t.Path(), cp.Size, err)
		}
		for i, leaf := range leaves {
			x := start + int64(i)
			if tlog.RecordHash(leaf) != hashes[i] {
				return nil, fmt.Errorf("evidence: leaf %d (%s) is not the one checkpoint %d signed", x, t.Path(), cp.Size)
			}
			e, err := ParseCanonical(leaf)
			if err != nil {
				return nil, fmt.Errorf("evidence: leaf %d: %w", x, err)
			}
			if err := fn(x, e); err != nil {
				return cp, err
			}
		}
	}
	return cp, nil
}
