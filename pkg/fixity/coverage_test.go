package fixity_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/stores"
)

var day = 24 * time.Hour

func put(t *testing.T, idx contentindex.Index, account, store, space string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := idx.Upsert(context.Background(), contentindex.Entry{
			Item:     contentindex.Item{Account: account, StoreID: store, SpaceID: space, ContentID: id},
			Checksum: "d41d8cd98f00b204e9800998ecf8427e", Modified: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestComputeClassifiesEveryCopy: each copy is within target, overdue
// (old verdict, or none), or not covered; by method; oldest age; a
// verdict of a deleted copy is not counted; the page size does not change
// the result.
func TestComputeClassifiesEveryCopy(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	now := clk.Now()
	idx := memcontentindex.New()
	put(t, idx, "acme", "1", "photos", "a", "b", "c", "d", "e", "f", "g")
	if _, err := idx.MarkDeleted(ctx, contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "c"}, now); err != nil {
		t.Fatal(err)
	}
	vs := &fakeVerdicts{}
	vs.put("acme/1/photos",
		bitlog.Verdict{ContentID: "a", Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: now.Add(-10 * day)},
		bitlog.Verdict{ContentID: "b", Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: now.Add(-100 * day)},
		bitlog.Verdict{ContentID: "c", Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: now.Add(-1 * day)}, // deleted copy
		bitlog.Verdict{ContentID: "d", Result: bitlog.ResultSuccess, Method: bitlog.MethodAtRest, Archived: true, CheckedAt: now.Add(-200 * day)},
		bitlog.Verdict{ContentID: "e", Result: bitlog.ResultFailure, Method: bitlog.MethodRead, CheckedAt: now.Add(-2 * day)},
		bitlog.Verdict{ContentID: "f", Result: bitlog.ResultSuccess, Method: bitlog.MethodAtRest, Archived: true, CheckedAt: now.Add(-400 * day)},
		bitlog.Verdict{ContentID: "zz", Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: now}, // no index row
	)
	sp := fixity.Space{Account: "acme", StoreID: "1", SpaceID: "photos"}
	want := fixity.Coverage{Account: "acme", StoreID: "1", SpaceID: "photos", Spaces: 1,
		Target: stores.Fixity{Interval: 90 * day, ArchivedInterval: 365 * day, SampleRate: 1},
		Copies: 6, Within: 3, Overdue: 3, NeverVerified: 1, Failed: 1, Read: 3, AtRest: 2,
		Oldest: now.Add(-400 * day), MaxLate: 35 * day, NextDue: now.Add(80 * day), At: now}
	for _, page := range []int{1, 2, 3, 1000} {
		src := fixity.Source{Index: idx, Verdicts: vs, Clock: clk, PageSize: page}
		got, err := src.Compute(ctx, sp, stores.Fixity{})
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("page %d:\n got %+v\nwant %+v", page, got, want)
		}
	}
	got, _ := fixity.Source{Index: idx, Verdicts: vs, Clock: clk}.Compute(ctx, sp, stores.Fixity{})
	if got.OldestAge() != 400*day || got.Share(got.Within) != 0.5 || got.Covered(0) || got.Lateness() != math.MaxInt64 {
		t.Fatalf("derived figures: age %v share %v covered %v lateness %v", got.OldestAge(), got.Share(got.Within), got.Covered(0), got.Lateness())
	}

	// With archivedMethod none, the archived copies are not covered —
	// never within target, not overdue — even the fresh one.
	got, err := fixity.Source{Index: idx, Verdicts: vs, Clock: clk}.Compute(ctx, sp, stores.Fixity{ArchivedMethod: stores.ArchivedNone})
	if err != nil {
		t.Fatal(err)
	}
	if got.NotCovered != 2 || got.Within != 2 || got.Overdue != 2 || got.Within+got.Overdue+got.NotCovered != got.Copies {
		t.Fatalf("archived none: %+v", got)
	}

	// The store's own target: a 7-day interval makes a overdue too (e,
	// 2 days old, and the archived d stay within).
	got, _ = fixity.Source{Index: idx, Verdicts: vs, Clock: clk}.Compute(ctx, sp, stores.Fixity{Interval: 7 * day})
	if got.Within != 2 || got.Overdue != 4 || got.MaxLate != 93*day || !got.NextDue.Equal(now.Add(5*day)) {
		t.Fatalf("7-day target: %+v", got)
	}
}

// TestComputeAtTheBoundary: a verdict exactly one interval old is
// overdue; one a microsecond younger is within target. The fake clock
// moves the boundary.
func TestComputeAtTheBoundary(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	idx := memcontentindex.New()
	put(t, idx, "acme", "1", "s", "x")
	vs := &fakeVerdicts{}
	vs.put("acme/1/s", bitlog.Verdict{ContentID: "x", Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: clk.Now()})
	src := fixity.Source{Index: idx, Verdicts: vs, Clock: clk}
	sp := fixity.Space{Account: "acme", StoreID: "1", SpaceID: "s"}
	clk.Advance(90*day - time.Microsecond)
	if c, _ := src.Compute(ctx, sp, stores.Fixity{}); c.Within != 1 || !c.Covered(0) || c.Covered(time.Microsecond) {
		t.Fatalf("just within: %+v", c)
	}
	clk.Advance(time.Microsecond)
	if c, _ := src.Compute(ctx, sp, stores.Fixity{}); c.Overdue != 1 || c.Covered(0) || c.MaxLate != 0 || c.NeverVerified != 0 {
		t.Fatalf("exactly due: %+v", c)
	}
}

// TestComputeFlatMemory: a space of 20,000 copies is read in pages of
// 100: no page of verdicts larger than that is ever held.
func TestComputeFlatMemory(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Time{})
	idx := memcontentindex.New()
	vs := &fakeVerdicts{}
	var verdicts []bitlog.Verdict
	for i := range 20000 {
		id := fmt.Sprintf("item-%06d", i)
		put(t, idx, "a", "1", "big", id)
		if i%2 == 0 {
			verdicts = append(verdicts, bitlog.Verdict{ContentID: id, Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: clk.Now()})
		}
	}
	vs.put("a/1/big", verdicts...)
	c, err := fixity.Source{Index: idx, Verdicts: vs, Clock: clk, PageSize: 100}.Compute(ctx, fixity.Space{Account: "a", StoreID: "1", SpaceID: "big"}, stores.Fixity{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Copies != 20000 || c.Within != 10000 || c.NeverVerified != 10000 || vs.maxPage > 100 || vs.calls != 100 {
		t.Fatalf("coverage %+v, %d verdict calls, largest page %d", c, vs.calls, vs.maxPage)
	}
}

// badVerdicts returns a page out of order, or "more" with nothing.
type badVerdicts struct{ empty bool }

func (b badVerdicts) Verdicts(context.Context, string, string, string, string, int) ([]bitlog.Verdict, bool, error) {
	if b.empty {
		return nil, true, nil
	}
	return []bitlog.Verdict{{ContentID: "b"}, {ContentID: "a"}}, false, nil
}

// TestComputeRefusesABrokenListing: a listing out of order, or one that
// says more but returns nothing, is an error, not a miscount or a loop.
func TestComputeRefusesABrokenListing(t *testing.T) {
	ctx := context.Background()
	idx := memcontentindex.New()
	put(t, idx, "a", "1", "s", "a", "b")
	for _, v := range []bitlog.Verdicts{badVerdicts{}, badVerdicts{empty: true}} {
		_, err := fixity.Source{Index: idx, Verdicts: v}.Compute(ctx, fixity.Space{Account: "a", StoreID: "1", SpaceID: "s"}, stores.Fixity{})
		if !errors.Is(err, fixity.ErrOrder) {
			t.Fatalf("%+v: err %v, want ErrOrder", v, err)
		}
	}
	if _, err := (fixity.Source{Index: idx}).Compute(ctx, fixity.Space{}, stores.Fixity{}); err == nil {
		t.Fatal("a source without verdicts computed coverage")
	}
}

// TestTotalsAndUrgency: the per-store roll-up sums the spaces; spaces sort
// never-verified first, then the most overdue, then the soonest due, then
// those a run cannot cover; ties keep their order.
func TestTotalsAndUrgency(t *testing.T) {
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	cs := []fixity.Coverage{
		{Account: "a", StoreID: "1", SpaceID: "fresh", Spaces: 1, Copies: 2, Within: 2, Read: 2, Oldest: at.Add(-5 * day), NextDue: at.Add(85 * day), At: at},
		{Account: "a", StoreID: "1", SpaceID: "late", Spaces: 1, Copies: 3, Within: 1, Overdue: 2, Read: 3, Oldest: at.Add(-120 * day), MaxLate: 30 * day, NextDue: at.Add(day), At: at},
		{Account: "a", StoreID: "2", SpaceID: "new", Spaces: 1, Copies: 1, Overdue: 1, NeverVerified: 1, At: at},
		{Account: "a", StoreID: "1", SpaceID: "later", Spaces: 1, Copies: 1, Overdue: 1, AtRest: 1, Oldest: at.Add(-500 * day), MaxLate: 135 * day, At: at},
		{Account: "a", StoreID: "2", SpaceID: "cold", Spaces: 1, Copies: 1, NotCovered: 1, AtRest: 1, Oldest: at.Add(-day), At: at},
		{Account: "a", StoreID: "2", SpaceID: "empty", Spaces: 1, At: at},
	}
	tot := fixity.Totals(cs)
	if len(tot) != 2 || tot[0].StoreID != "1" || tot[0].Spaces != 3 || tot[0].Copies != 6 || tot[0].Within != 3 || tot[0].Overdue != 3 ||
		tot[0].Read != 5 || tot[0].AtRest != 1 || !tot[0].Oldest.Equal(at.Add(-500*day)) || tot[0].MaxLate != 135*day || !tot[0].NextDue.Equal(at.Add(day)) ||
		tot[1].Copies != 2 || tot[1].NotCovered != 1 || tot[1].NeverVerified != 1 || tot[1].SpaceID != "" {
		t.Fatalf("totals: %+v", tot)
	}
	fixity.ByUrgency(cs)
	var order []string
	for _, c := range cs {
		order = append(order, c.SpaceID)
	}
	if fmt.Sprint(order) != "[new empty later late fresh cold]" {
		t.Fatalf("order %v", order)
	}
}

// failingVerdicts fails on its second page.
type failingVerdicts struct{ calls int }

func (f *failingVerdicts) Verdicts(_ context.Context, _, _, _, after string, _ int) ([]bitlog.Verdict, bool, error) {
	f.calls++
	if f.calls > 1 {
		return nil, false, errors.New("connection reset")
	}
	return []bitlog.Verdict{{ContentID: "a", Result: bitlog.ResultSuccess, Method: bitlog.MethodRead}}, true, nil
}

// TestComputeFailsWithItsListing: an error of either listing, mid-way,
// is Compute's error (never a partial count), and both readers have
// stopped when it returns (the race detector watches the counter).
func TestComputeFailsWithItsListing(t *testing.T) {
	ctx := context.Background()
	idx := memcontentindex.New()
	put(t, idx, "a", "1", "s", "a", "b", "c")
	fv := &failingVerdicts{}
	_, err := fixity.Source{Index: idx, Verdicts: fv, PageSize: 1}.Compute(ctx, fixity.Space{Account: "a", StoreID: "1", SpaceID: "s"}, stores.Fixity{})
	if err == nil || !strings.Contains(err.Error(), "connection reset") || fv.calls != 2 {
		t.Fatalf("err %v after %d calls, want the second page's error", err, fv.calls)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = fixity.Source{Index: ctxIndex{idx}, Verdicts: &fakeVerdicts{}}.Compute(cancelled, fixity.Space{Account: "a", StoreID: "1", SpaceID: "s"}, stores.Fixity{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err %v", err)
	}
}

// ctxIndex is an index that honours cancellation, as PostgreSQL does.
type ctxIndex struct{ contentindex.Index }

func (c ctxIndex) List(ctx context.Context, account, storeID, spaceID, after string, limit int) ([]contentindex.Entry, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	return c.Index.List(ctx, account, storeID, spaceID, after, limit)
}
