package evidence

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/millfleet/mill/pkg/blob"
	"golang.org/x/mod/sumdb/tlog"
)

// rootCheck is a signed root the leaves must give at a tree size.
type rootCheck struct {
	size        int64
	root        tlog.Hash
	where, what string
}

// leafStream checks a log's leaves as it reads them, holding O(log n)
// hashes and one tile a level (and a 16-byte digest of each ID seen): the
// roots of the tree's prefixes come from the frontier of its perfect
// subtrees (RFC 6962: the root folds them right to left), and each hash
// tile is compared as soon as the leaves under it are read.
type leafStream struct {
	ctx   context.Context
	blobs blob.Store
	r     *Report

	n        int64       // leaves read
	frontier []tlog.Hash // roots of the perfect subtrees of the first n leaves, left to right
	heights  []int       // their heights
	bufs     [][]tlog.Hash
	full     []int64     // complete tiles passed at each level
	checks   []rootCheck // by size; consumed as the stream passes each
	seen     map[[16]byte]int64
	onTile   func(t tlog.Tile) // tests: each tile compared
}

// run reads the leaves of the tree of size n; ok is false when a data
// tile could not be read whole (the leaves after it are not checked).
func (s *leafStream) run(n int64) (ok bool, err error) {
	s.seen = make(map[[16]byte]int64, min(n, 1<<20))
	empty, err := tlog.TreeHash(0, nil)
	if err != nil {
		return false, err
	}
	s.passChecks(empty)
	for start := int64(0); start < n; start += 1 << TileHeight {
		t := dataTile(start, n)
		leaves, err := readDataTile(s.ctx, s.blobs, t)
		if err != nil {
			s.r.add(t.Path(), "%v: leaves %d and after not checked", err, start)
			return false, nil
		}
		for _, leaf := range leaves {
			if err := s.add(leaf, t); err != nil {
				return false, err
			}
		}
	}
	// The partial tiles of the tree of size n.
	for level, buf := range s.bufs {
		if len(buf) > 0 {
			if err := s.checkTile(tlog.Tile{H: TileHeight, L: level, N: s.full[level], W: len(buf)}, buf); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// add reads one leaf.
func (s *leafStream) add(leaf []byte, t tlog.Tile) error {
	x := s.n
	if e, err := ParseCanonical(leaf); err != nil {
		s.r.add(fmt.Sprintf("leaf %d", x), "in %s: %v", t.Path(), err)
	} else {
		id := sha256.Sum256([]byte(e.ID))
		k := [16]byte(id[:16])
		if prev, dup := s.seen[k]; dup {
			s.r.add(fmt.Sprintf("leaf %d", x), "event %s is also leaf %d", e.ID, prev)
		} else {
			s.seen[k] = x
		}
	}
	h := tlog.RecordHash(leaf)
	s.frontier, s.heights = append(s.frontier, h), append(s.heights, 0)
	for k := len(s.frontier); k >= 2 && s.heights[k-1] == s.heights[k-2]; k = len(s.frontier) {
		s.frontier = append(s.frontier[:k-2], tlog.NodeHash(s.frontier[k-2], s.frontier[k-1]))
		s.heights = append(s.heights[:k-2], s.heights[k-2]+1)
	}
	s.n++
	if err := s.push(0, h); err != nil {
		return err
	}
	s.passChecks(s.root())
	return nil
}

// root is the root of the first n leaves.
func (s *leafStream) root() tlog.Hash {
	h := s.frontier[len(s.frontier)-1]
	for i := len(s.frontier) - 2; i >= 0; i-- {
		h = tlog.NodeHash(s.frontier[i], h)
	}
	return h
}

// passChecks checks the signed roots of the tree of size n.
func (s *leafStream) passChecks(root tlog.Hash) {
	for len(s.checks) > 0 && s.checks[0].size <= s.n {
		if c := s.checks[0]; c.size == s.n && c.root != root {
			s.r.add(c.where, "%s", c.what)
		}
		s.checks = s.checks[1:]
	}
}

// push adds a hash to the current tile of its level; a complete tile is
// compared with the stored one and its root goes up a level.
func (s *leafStream) push(level int, h tlog.Hash) error {
	for len(s.bufs) <= level {
		s.bufs, s.full = append(s.bufs, nil), append(s.full, 0)
	}
	s.bufs[level] = append(s.bufs[level], h)
	if len(s.bufs[level]) < 1<<TileHeight {
		return nil
	}
	if err := s.checkTile(tlog.Tile{H: TileHeight, L: level, N: s.full[level], W: 1 << TileHeight}, s.bufs[level]); err != nil {
		return err
	}
	root := subtreeRoot(s.bufs[level])
	s.bufs[level] = s.bufs[level][:0]
	s.full[level]++
	return s.push(level+1, root)
}

// checkTile compares the stored tile with the hashes the leaves give.
func (s *leafStream) checkTile(t tlog.Tile, hashes []tlog.Hash) error {
	if s.onTile != nil {
		s.onTile(t)
	}
	want := make([]byte, 0, len(hashes)*tlog.HashSize)
	for _, h := range hashes {
		want = append(want, h[:]...)
	}
	got, err := getBlob(s.ctx, s.blobs, t.Path())
	switch {
	case errors.Is(err, blob.ErrNotFound):
		s.r.add(t.Path(), "missing")
	case err != nil:
		return err
	case !bytes.Equal(got, want):
		s.r.add(t.Path(), "rewritten: its hashes are not those of the leaves")
	}
	return nil
}

// subtreeRoot is the root of a perfect tree over hashes (a power of two).
func subtreeRoot(hashes []tlog.Hash) tlog.Hash {
	for len(hashes) > 1 {
		next := make([]tlog.Hash, len(hashes)/2)
		for i := range next {
			next[i] = tlog.NodeHash(hashes[2*i], hashes[2*i+1])
		}
		hashes = next
	}
	return hashes[0]
}
