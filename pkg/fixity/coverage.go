package fixity

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/millfleet/mill/internal/base/paging"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/stores"
)

// Index is the part of the content index coverage reads
// (contentindex.Index implements it): a space's live rows in ascending
// byte-wise content-id order, paged.
type Index interface {
	List(ctx context.Context, account, storeID, spaceID, after string, limit int) ([]contentindex.Entry, bool, error)
}

// Source is where coverage is read from. Index and Verdicts are required.
type Source struct {
	Index    Index
	Verdicts bitlog.Verdicts
	// Clock tells the time coverage is measured at (default the system
	// clock).
	Clock clock.Clock
	// PageSize is the page of both listings (default paging.MaxItems, the
	// largest page of both; clamped by each).
	PageSize int
}

// ErrOrder: a listing broke its contract (a page out of order, or "more"
// with an empty page); the coverage it would give cannot be trusted.
var ErrOrder = errors.New("fixity: listing out of order")

// Space names one space of a store.
type Space struct{ Account, StoreID, SpaceID string }

func (s Space) String() string { return s.Account + "/" + s.StoreID + "/" + s.SpaceID }

// Coverage is the fixity coverage of one space, or the roll-up of a
// store's spaces (SpaceID "", see Totals). Copies = Within + Overdue +
// NotCovered.
type Coverage struct {
	Account, StoreID, SpaceID string
	// Spaces counts the spaces summed (1 for a space).
	Spaces int64
	// Target is the store's fixity target the copies were held to.
	Target stores.Fixity
	// Copies counts the live rows of the content index.
	Copies int64
	// Within counts the copies whose verdict is younger than their
	// interval.
	Within int64
	// Overdue counts the copies whose verdict is as old as their interval
	// or older, or that have none (NeverVerified of them).
	Overdue       int64
	NeverVerified int64
	// NotCovered counts the archived copies of a store whose archived
	// method is "none": never within target.
	NotCovered int64
	// Failed counts the copies whose verdict is a FAILURE.
	Failed int64
	// Read and AtRest count the copies whose verdict was made that way.
	Read, AtRest int64
	// Oldest is when the oldest verdict was made (zero: no copy has one).
	Oldest time.Time
	// MaxLate is how far past its target the most overdue verdict is
	// (0 when none is overdue; never-verified copies are not in it).
	MaxLate time.Duration
	// NextDue is the earliest time a copy within target falls due (zero
	// when none is within target).
	NextDue time.Time
	// At is when the coverage was measured.
	At time.Time
}

// OldestAge is the age of the oldest verdict at At (0 when none).
func (c Coverage) OldestAge() time.Duration {
	if c.Oldest.IsZero() {
		return 0
	}
	return max(c.At.Sub(c.Oldest), 0)
}

// Share returns n as a share of the copies (0 for no copy).
func (c Coverage) Share(n int64) float64 {
	if c.Copies == 0 {
		return 0
	}
	return float64(n) / float64(c.Copies)
}

// Covered reports whether every copy of the space is within target and
// stays so for margin after At: the space has copies, none overdue or
// not covered, and none falls due before At + margin. A space whose
// content index lists no copy is not covered (the index may lag its
// store).
func (c Coverage) Covered(margin time.Duration) bool {
	return c.Copies > 0 && c.Within == c.Copies && c.NextDue.After(c.At.Add(max(margin, 0)))
}

// add counts one copy with its verdict (nil: none).
func (c *Coverage) add(v *bitlog.Verdict) {
	c.Copies++
	if v == nil {
		c.Overdue++
		c.NeverVerified++
		return
	}
	switch v.Method {
	case bitlog.MethodRead:
		c.Read++
	case bitlog.MethodAtRest:
		c.AtRest++
	}
	if v.Result == bitlog.ResultFailure {
		c.Failed++
	}
	if c.Oldest.IsZero() || v.CheckedAt.Before(c.Oldest) {
		c.Oldest = v.CheckedAt
	}
	if v.Archived && c.Target.ArchivedMethod == stores.ArchivedNone {
		c.NotCovered++
		return
	}
	due := v.CheckedAt.Add(c.Target.IntervalFor(v.Archived))
	if due.After(c.At) {
		c.Within++
		if c.NextDue.IsZero() || due.Before(c.NextDue) {
			c.NextDue = due
		}
		return
	}
	c.Overdue++
	c.MaxLate = max(c.MaxLate, c.At.Sub(due))
}

// Compute measures the coverage of one space against target (whose unset
// fields take their defaults, as stores.Store.FixityTarget gives them). It merges the space's content-index
// rows with its verdicts page by page, in content-id order: memory stays a
// few pages whatever the size of the space. Each listing is read one page
// ahead in its own goroutine, so the two queries and the merge overlap;
// both have ended when Compute returns.
func (src Source) Compute(ctx context.Context, sp Space, target stores.Fixity) (Coverage, error) {
	if src.Index == nil || src.Verdicts == nil {
		return Coverage{}, errors.New("fixity: Source needs Index and Verdicts")
	}
	c := Coverage{Account: sp.Account, StoreID: sp.StoreID, SpaceID: sp.SpaceID, Spaces: 1,
		Target: stores.Store{Fixity: target}.FixityTarget(), At: clock.Or(src.Clock).Now()}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	ni, nv := contentindex.PageSize(src.pageSize()), bitlog.PageSize(src.pageSize())
	entries := prefetch(ctx, &wg, func(ctx context.Context, after string) ([]contentindex.Entry, bool, error) {
		return src.Index.List(ctx, sp.Account, sp.StoreID, sp.SpaceID, after, ni)
	}, func(e contentindex.Entry) string { return e.ContentID })
	vs := verdictStream{sp: sp, more: true, pages: prefetch(ctx, &wg, func(ctx context.Context, after string) ([]bitlog.Verdict, bool, error) {
		return src.Verdicts.Verdicts(ctx, sp.Account, sp.StoreID, sp.SpaceID, after, nv)
	}, func(v bitlog.Verdict) string { return v.ContentID })}
	after := ""
	for {
		p, ok := <-entries
		if !ok {
			return Coverage{}, fmt.Errorf("fixity: coverage of %s: %w", sp, context.Cause(ctx))
		}
		if p.err != nil {
			return Coverage{}, fmt.Errorf("fixity: coverage of %s: %w", sp, p.err)
		}
		if p.more && len(p.items) == 0 {
			return Coverage{}, fmt.Errorf("%w: content index of %s after %q: more, but an empty page", ErrOrder, sp, after)
		}
		for _, e := range p.items {
			if e.ContentID <= after {
				return Coverage{}, fmt.Errorf("%w: content index of %s: %q after %q", ErrOrder, sp, e.ContentID, after)
			}
			after = e.ContentID
			v, err := vs.find(ctx, e.ContentID)
			if err != nil {
				return Coverage{}, err
			}
			c.add(v)
		}
		if !p.more {
			return c, nil
		}
	}
}

// page is one page of a listing, or its error.
type page[T any] struct {
	items []T
	more  bool
	err   error
}

// prefetch reads a listing's pages in a goroutine (counted in wg), one page
// ahead of the reader: the next page starts after the last id of the one
// before. It stops after an error, the last page, an empty page, or when
// ctx is done; the channel is closed then.
func prefetch[T any](ctx context.Context, wg *sync.WaitGroup, list func(ctx context.Context, after string) ([]T, bool, error), id func(T) string) <-chan page[T] {
	ch := make(chan page[T], 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ch)
		after := ""
		for {
			items, more, err := list(ctx, after)
			select {
			case ch <- page[T]{items, more, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || !more || len(items) == 0 {
				return
			}
			after = id(items[len(items)-1])
		}
	}()
	return ch
}

func (src Source) pageSize() int {
	if src.PageSize > 0 {
		return src.PageSize
	}
	return paging.MaxItems
}

// verdictStream walks a space's verdicts in content-id order, one page at
// a time.
type verdictStream struct {
	sp    Space
	pages <-chan page[bitlog.Verdict]
	page  []bitlog.Verdict
	i     int
	after string // the last content id read
	more  bool   // further pages may follow
}

// find returns the verdict of id, or nil; ids must be asked in ascending
// order. Verdicts of ids before id (copies the index no longer lists)
// are passed over.
func (s *verdictStream) find(ctx context.Context, id string) (*bitlog.Verdict, error) {
	for {
		if s.i == len(s.page) {
			if !s.more {
				return nil, nil
			}
			p, ok := <-s.pages
			if !ok {
				return nil, fmt.Errorf("fixity: verdicts of %s: %w", s.sp, context.Cause(ctx))
			}
			if p.err != nil {
				return nil, fmt.Errorf("fixity: verdicts of %s: %w", s.sp, p.err)
			}
			if p.more && len(p.items) == 0 {
				return nil, fmt.Errorf("%w: verdicts of %s after %q: more, but an empty page", ErrOrder, s.sp, s.after)
			}
			for _, v := range p.items {
				if v.ContentID <= s.after {
					return nil, fmt.Errorf("%w: verdicts of %s: %q after %q", ErrOrder, s.sp, v.ContentID, s.after)
				}
				s.after = v.ContentID
			}
			s.page, s.i, s.more = p.items, 0, p.more
			if len(p.items) == 0 {
				return nil, nil
			}
		}
		v := &s.page[s.i]
		switch {
		case v.ContentID < id:
			s.i++
		case v.ContentID == id:
			s.i++
			return v, nil
		default:
			return nil, nil
		}
	}
}

// StoreTarget returns the fixity target of a registered store, its unset
// fields at their defaults (stores.Store.FixityTarget).
func StoreTarget(s stores.Store) stores.Fixity { return s.FixityTarget() }
