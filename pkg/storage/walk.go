package storage

import (
	"context"
	"fmt"
	"iter"
)

// DefaultPageSize is the page size Walk uses when given 0.
const DefaultPageSize = 1000

// Walk iterates over every content ID of space in byte-wise ascending order,
// starting strictly after `after` ("" = from the start), fetching pages of
// pageSize IDs (DefaultPageSize when <= 0). Memory is one page. An error ends
// the iteration after being yielded once with an empty ID.
func Walk(ctx context.Context, p Provider, space, after string, pageSize int) iter.Seq2[string, error] {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	return func(yield func(string, error) bool) {
		marker := after
		for {
			ids, more, err := p.ListContent(ctx, space, marker, pageSize)
			if err != nil {
				yield("", err)
				return
			}
			for _, id := range ids {
				if !yield(id, nil) {
					return
				}
			}
			if !more {
				return
			}
			if len(ids) == 0 {
				yield("", fmt.Errorf("storage: walk %q: provider reported more content after %q but returned none", space, marker))
				return
			}
			marker = ids[len(ids)-1]
		}
	}
}

// Merged is one step of MergeSorted: an ID and which listings hold it.
type Merged struct {
	ID   string
	InA  bool
	InB  bool
	Both bool // InA && InB
}

// MergeSorted merges two listings in byte-wise ascending order (such as two
// Walks of the same space on two stores) in constant memory, yielding each
// distinct ID once with the listings that hold it. It is how duplication
// finds items only in the source (copy), only in the destination (delete)
// and in both (compare):
//
//	for m, err := range storage.MergeSorted(storage.Walk(ctx, src, space, "", 0), storage.Walk(ctx, dst, space, "", 0)) {
//		if err != nil { return err }
//		switch { case m.Both: compare(m.ID); case m.InA: copy(m.ID); default: remove(m.ID) }
//	}
//
// An error from either listing, or a listing out of order, is yielded once
// and ends the merge.
func MergeSorted(a, b iter.Seq2[string, error]) iter.Seq2[Merged, error] {
	return func(yield func(Merged, error) bool) {
		nextA, stopA := iter.Pull2(a)
		defer stopA()
		nextB, stopB := iter.Pull2(b)
		defer stopB()

		pull := func(next func() (string, error, bool), prev *string, started *bool, name string) (string, bool, error) {
			id, err, ok := next()
			if !ok {
				return "", false, nil
			}
			if err != nil {
				return "", false, err
			}
			if *started && id <= *prev {
				return "", false, fmt.Errorf("storage: merge: listing %s out of order: %q after %q", name, id, *prev)
			}
			*prev, *started = id, true
			return id, true, nil
		}
		var prevA, prevB string
		var startedA, startedB bool
		idA, okA, err := pull(nextA, &prevA, &startedA, "A")
		if err != nil {
			yield(Merged{}, err)
			return
		}
		idB, okB, err := pull(nextB, &prevB, &startedB, "B")
		if err != nil {
			yield(Merged{}, err)
			return
		}
		for okA || okB {
			var m Merged
			switch {
			case okA && (!okB || idA < idB):
				m = Merged{ID: idA, InA: true}
			case okB && (!okA || idB < idA):
				m = Merged{ID: idB, InB: true}
			default:
				m = Merged{ID: idA, InA: true, InB: true, Both: true}
			}
			if !yield(m, nil) {
				return
			}
			if m.InA {
				if idA, okA, err = pull(nextA, &prevA, &startedA, "A"); err != nil {
					yield(Merged{}, err)
					return
				}
			}
			if m.InB {
				if idB, okB, err = pull(nextB, &prevB, &startedB, "B"); err != nil {
					yield(Merged{}, err)
					return
				}
			}
		}
	}
}
