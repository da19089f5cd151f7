package evidence

import (
	"bytes"
	"context"
	"errors"
	"fmt"

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

// hashSlice is a HashReader over every stored hash of a tree, by index.
type hashSlice []tlog.Hash

func (s hashSlice) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(s)) {
			return nil, fmt.Errorf("hash %d not computed", x)
		}
		out[i] = s[x]
	}
	return out, nil
}

// Verify checks the log in blobs with only its verifier key: every
// checkpoint's signature and origin, the history's consistency (each
// checkpoint with the next, by a tlog tree proof from the stored tiles),
// that the latest checkpoint is the newest, that every leaf up to the
// newest checkpoint is a canonical event with an ID of its own, that the
// leaves hash to every checkpoint's root, and that every stored hash tile
// is the one the leaves give. Every mismatch is a Problem of the report;
// the error is for a store that cannot be read or a bad Trusted.
// It holds two hashes per leaf in memory (64 bytes) and the IDs.
func Verify(ctx context.Context, blobs Blobs, v note.Verifier, opts VerifyOptions) (*Report, error) {
	r := &Report{}
	history, err := readHistory(ctx, blobs, v, r)
	if err != nil {
		return nil, err
	}
	r.Checkpoints = len(history)
	latest, err := blobs.Get(ctx, latestKey)
	switch {
	case errors.Is(err, ErrNotFound):
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
	hashes, ok := verifyLeaves(ctx, blobs, r.Latest.Size, r)
	if !ok {
		return r, checkTrusted(opts.Trusted, v, r, nil)
	}
	r.Leaves = r.Latest.Size
	hs := hashSlice(hashes)
	for _, cp := range history {
		root, err := tlog.TreeHash(cp.Size, hs)
		if err != nil || root != cp.Root {
			r.add(historyKey(cp.Size), "its root hash is not the leaves': the log's content changed after it was signed")
		}
	}
	for _, t := range tlog.NewTiles(TileHeight, 0, r.Latest.Size) {
		want, err := tlog.ReadTileData(t, hs)
		if err != nil {
			return nil, err
		}
		got, err := blobs.Get(ctx, t.Path())
		switch {
		case errors.Is(err, ErrNotFound):
			r.add(t.Path(), "missing")
		case err != nil:
			return nil, err
		case !bytes.Equal(got, want):
			r.add(t.Path(), "rewritten: its hashes are not those of the leaves")
		}
	}
	return r, checkTrusted(opts.Trusted, v, r, hs)
}

// readHistory reads and checks the checkpoint history, sorted by size.
func readHistory(ctx context.Context, blobs Blobs, v note.Verifier, r *Report) ([]*Checkpoint, error) {
	keys, err := blobs.List(ctx, historyPrefix)
	if err != nil {
		return nil, err
	}
	var history []*Checkpoint
	for _, k := range keys {
		msg, err := blobs.Get(ctx, k)
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

// verifyLeaves reads the leaves of a tree of size n, checks each is a
// canonical event with an ID of its own, and returns the tree's stored
// hashes; ok is false when a data tile could not be read whole.
func verifyLeaves(ctx context.Context, blobs Blobs, n int64, r *Report) (hashes []tlog.Hash, ok bool) {
	// The capacity is bounded: n comes from a signed checkpoint, but the
	// leaves must be there before memory is spent on them.
	hashes = make([]tlog.Hash, 0, tlog.StoredHashCount(min(n, 1<<20)))
	seen := make(map[string]int64, min(n, 1<<20))
	for start := int64(0); start < n; start += 1 << TileHeight {
		t := dataTile(start, n)
		leaves, err := readDataTile(ctx, blobs, t)
		if err != nil {
			r.add(t.Path(), "%v: leaves %d and after not checked", err, start)
			return nil, false
		}
		for i, leaf := range leaves {
			x := start + int64(i)
			if e, err := ParseCanonical(leaf); err != nil {
				r.add(fmt.Sprintf("leaf %d", x), "in %s: %v", t.Path(), err)
			} else if prev, dup := seen[e.ID]; dup {
				r.add(fmt.Sprintf("leaf %d", x), "event %s is also leaf %d", e.ID, prev)
			} else {
				seen[e.ID] = x
			}
			hs, err := tlog.StoredHashes(x, leaf, hashSlice(hashes))
			if err != nil {
				r.add(fmt.Sprintf("leaf %d", x), "%v", err)
				return nil, false
			}
			hashes = append(hashes, hs...)
		}
	}
	return hashes, true
}

// checkTrusted checks that the log still holds a checkpoint the verifier
// trusted before.
func checkTrusted(trusted []byte, v note.Verifier, r *Report, hs hashSlice) error {
	if trusted == nil {
		return nil
	}
	tc, err := OpenCheckpoint(trusted, v)
	if err != nil {
		return fmt.Errorf("evidence: trusted checkpoint: %w", err)
	}
	if r.Latest == nil || r.Latest.Size < tc.Size {
		r.add("trusted checkpoint", "size %d, but the log's newest checkpoint is smaller: the log was rolled back", tc.Size)
		return nil
	}
	if hs == nil {
		return nil
	}
	root, err := tlog.TreeHash(tc.Size, hs)
	if err != nil || root != tc.Root {
		r.add("trusted checkpoint", "size %d: the log's leaves no longer give its root: history was rewritten", tc.Size)
	}
	return nil
}
