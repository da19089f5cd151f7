package evidence

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/millfleet/mill/pkg/blob"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Problem is one mismatch Verify found: what is wrong, and where.
type Problem struct {
	Where string // the blob key, or "leaf N"
	What  string
}

func (p Problem) String() string { return p.Where + ": " + p.What }

// Report is the outcome of Verify.
type Report struct {
	Checkpoints int         // signed checkpoints in the history
	Latest      *Checkpoint // the newest valid checkpoint; nil for an empty log
	Leaves      int64       // leaves checked against the checkpoints
	Problems    []Problem
}

// OK reports whether the log verified without a problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) add(where, format string, a ...any) {
	r.Problems = append(r.Problems, Problem{Where: where, What: fmt.Sprintf(format, a...)})
}

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// Trusted is a signed checkpoint the verifier checked before (kept
	// outside the log): the log must still contain it. Nil: none.
	Trusted []byte
}

// Verify checks the log in blobs with only its verifier key: every
// checkpoint's signature and origin, the history's consistency (each
// checkpoint with the next, by a tlog tree proof from the stored tiles),
// that the latest checkpoint is the newest, that every leaf up to the
// newest checkpoint is a canonical event with an ID of its own, that the
// leaves hash to every checkpoint's root, and that every stored hash tile
// is the one the leaves give. Every mismatch is a Problem of the report;
// the error is for a store that cannot be read or a bad Trusted.
// It reads the leaves once, holding O(log n) hashes, one tile a level
// and a 16-byte digest of each event ID.
func Verify(ctx context.Context, blobs blob.Store, v note.Verifier, opts VerifyOptions) (*Report, error) {
	r := &Report{}
	var trusted *Checkpoint
	if opts.Trusted != nil {
		var err error
		if trusted, err = OpenCheckpoint(opts.Trusted, v); err != nil {
			return nil, fmt.Errorf("evidence: trusted checkpoint: %w", err)
		}
	}
	history, err := readHistory(ctx, blobs, v, r)
	if err != nil {
		return nil, err
	}
	r.Checkpoints = len(history)
	latest, err := getBlob(ctx, blobs, latestKey)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		if len(history) > 0 {
			r.add(latestKey, "missing, while the history holds %d checkpoints", len(history))
		}
	case err != nil:
		return nil, err
	default:
		lc, err := OpenCheckpoint(latest, v)
		switch {
		case err != nil:
			r.add(latestKey, "%v", err)
		case len(history) == 0:
			r.add(latestKey, "size %d, but there is no checkpoint history", lc.Size)
		case !bytes.Equal(latest, history[len(history)-1].Signed):
			newest := history[len(history)-1]
			if lc.Size < newest.Size {
				r.add(latestKey, "size %d is older than the newest signed checkpoint (%s, size %d): replaced by an older checkpoint, or its writer died before updating it", lc.Size, historyKey(newest.Size), newest.Size)
			} else {
				r.add(latestKey, "size %d is not the newest checkpoint of the history (%s)", lc.Size, historyKey(newest.Size))
			}
		}
	}
	if len(history) == 0 {
		if trusted != nil {
			r.add("trusted checkpoint", "size %d, but the log has no checkpoint: the log was rolled back", trusted.Size)
		}
		return r, nil
	}
	r.Latest = history[len(history)-1]
	// Consistency of each checkpoint with the next, from the stored tiles.
	for i := 1; i < len(history); i++ {
		old, cur := history[i-1], history[i]
		thr := tlog.TileHashReader(cur.Tree(), &tileReader{blobs: blobs, ctx: ctx})
		p, err := tlog.ProveTree(cur.Size, old.Size, thr)
		if err == nil {
			err = tlog.CheckTree(p, cur.Size, cur.Root, old.Size, old.Root)
		}
		if err != nil {
			r.add(historyKey(old.Size), "not consistent with %s: the history was rewritten between them (or a tile was): %v", historyKey(cur.Size), err)
		}
	}
	checks := make([]rootCheck, 0, len(history)+1)
	for _, cp := range history {
		checks = append(checks, rootCheck{cp.Size, cp.Root, historyKey(cp.Size), "its root hash is not the leaves': the log's content changed after it was signed"})
	}
	if trusted != nil {
		if trusted.Size > r.Latest.Size {
			r.add("trusted checkpoint", "size %d, but the log's newest checkpoint is smaller: the log was rolled back", trusted.Size)
		} else {
			checks = append(checks, rootCheck{trusted.Size, trusted.Root, "trusted checkpoint",
				fmt.Sprintf("size %d: the log's leaves no longer give its root: history was rewritten", trusted.Size)})
		}
	}
	slices.SortStableFunc(checks, func(a, b rootCheck) int { return cmp.Compare(a.size, b.size) })
	s := &leafStream{ctx: ctx, blobs: blobs, r: r, checks: checks}
	ok, err := s.run(r.Latest.Size)
	if err != nil {
		return nil, err
	}
	if ok {
		r.Leaves = r.Latest.Size
	}
	return r, nil
}

// readHistory reads and checks the checkpoint history, sorted by size.
func readHistory(ctx context.Context, blobs blob.Store, v note.Verifier, r *Report) ([]*Checkpoint, error) {
	keys, err := blobs.List(ctx, historyPrefix)
	if err != nil {
		return nil, err
	}
	var history []*Checkpoint
	for _, k := range keys {
		msg, err := getBlob(ctx, blobs, k)
		if err != nil {
			return nil, err
		}
		cp, err := OpenCheckpoint(msg, v)
		if err != nil {
			r.add(k, "%v", err)
			continue
		}
		if historyKey(cp.Size) != k {
			r.add(k, "holds the checkpoint of size %d", cp.Size)
			continue
		}
		history = append(history, cp)
	}
	return history, nil
}
