package bit_test

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

// runDue runs one loop of a producer with cfg on e, biteSize items per
// bite, and returns the content IDs of the BIT tasks queued in order and
// the expected counts of the BIT_REPORTs by space (it drains the queues).
func runDue(t *testing.T, e *env, cfg bit.Config, biteSize int) (ids []string, expected map[string]int64) {
	t.Helper()
	cfg.Registry, cfg.BitLog = e.reg, e.log
	if cfg.Opener == nil {
		cfg.Opener = e.open
	}
	cfg.Logger = slogtest.New(t, slog.LevelInfo)
	p, err := bit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// One batch in flight: the tests check the order the producer emits
	// in, which concurrent batches may interleave on the queue.
	l, err := looping.New(looping.Config{Kind: bit.Kind, Producer: p, Queue: &bit.Router{Bit: e.bits, Report: e.reports},
		State: e.state, Lease: e.lease, Clock: e.clk, BiteSize: biteSize, MaxQueueSize: 1 << 20, SendsInFlight: 1,
		Logger: slog.New(slog.DiscardHandler), Progress: looping.ProgressOff})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := l.Run(t.Context()); err != nil || sum.Stopped != looping.StopDone {
		t.Fatal(sum, err)
	}
	for _, tk := range decodeAll(t, e.bits) {
		ids = append(ids, tk.Get("spaceId")+":"+tk.Get("contentId"))
	}
	expected = map[string]int64{}
	for _, tk := range decodeAll(t, e.reports) {
		n, err := strconv.ParseInt(tk.Get("expected"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		expected[tk.Get("spaceId")] = n
		rec, err := e.log.RunSpace(t.Context(), tk.Get("runId"), "acme", "1", tk.Get("spaceId"))
		if err != nil || rec.Expected != n {
			t.Fatalf("space %s: the bit log records %+v (%v), the report expects %d", tk.Get("spaceId"), rec, err, n)
		}
	}
	return ids, expected
}

// dueEnv: store acme/1 with spaces "a" (20 copies, every one verified 10
// days ago) and "b" (30 copies verified 10 days ago but: item 7 100 days
// ago, overdue; item 12 never; item 20 archived 200 days ago, within the
// archived interval of 365 days; item 21 archived 400 days ago; item 25 at
// the run's start), and verdicts of copies b no longer lists.
func dueEnv(t *testing.T) (*env, *fixity.Source, verdictList) {
	t.Helper()
	e := newEnv()
	e.open = opener{"acme/1": {spaces: map[string]int{"a": 20, "b": 30}}}
	e.reg.Accounts[0].Stores = e.reg.Accounts[0].Stores[:1]
	now, day := e.clk.Now(), 24*time.Hour
	idx := memcontentindex.New()
	vs := verdictList{}
	for _, space := range []string{"a", "b"} {
		for i := range e.open["acme/1"].spaces[space] {
			if _, err := idx.Upsert(t.Context(), contentindex.Entry{Item: contentindex.Item{Account: "acme", StoreID: "1", SpaceID: space, ContentID: itemID(i)},
				Modified: now.Add(-time.Hour)}); err != nil {
				t.Fatal(err)
			}
			v := bitlog.Verdict{ContentID: itemID(i), Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: now.Add(-10 * day)}
			switch {
			case space == "a":
			case i == 7:
				v.CheckedAt = now.Add(-100 * day)
			case i == 12:
				continue
			case i == 20 || i == 21:
				v.Method, v.Archived, v.CheckedAt = bitlog.MethodAtRest, true, now.Add(-200*day)
				if i == 21 {
					v.CheckedAt = now.Add(-400 * day)
				}
			case i == 25:
				v.CheckedAt = now
			}
			vs[space] = append(vs[space], v)
			if space == "b" && i%10 == 4 { // a copy deleted since its verdict
				vs[space] = append(vs[space], bitlog.Verdict{ContentID: itemID(i) + "-gone", Result: bitlog.ResultSuccess,
					Method: bitlog.MethodRead, CheckedAt: now.Add(-300 * day)})
			}
		}
	}
	return e, &fixity.Source{Index: idx, Verdicts: vs, Clock: e.clk}, vs
}

// TestSkipCoveredPerCopy: with SkipCovered, the space whose every copy is
// within target is left out, and in the space that is due only the copies
// that are due are queued, in listing order — the overdue copy first —
// and counted in the record and the report: not the copies within target
// (archived ones by the archived interval), but the one never verified,
// the archived one past its interval and the one whose verdict was made
// since the run started. Whatever the bite size (verdicts read a bite's
// worth at a time, over the verdicts of deleted copies), the same.
func TestSkipCoveredPerCopy(t *testing.T) {
	day := 24 * time.Hour
	want := []string{"b:" + itemID(7), "b:" + itemID(12), "b:" + itemID(21), "b:" + itemID(25)}
	for _, size := range []int{1, 3, 1000} {
		e, src, vs := dueEnv(t)
		ids, expected := runDue(t, e, bit.Config{Coverage: src, Verdicts: vs, SkipCovered: true, CoveredMargin: 30 * day}, size)
		if !slices.Equal(ids, want) || len(expected) != 1 || expected["b"] != 4 {
			t.Errorf("bite size %d: queued %v, reports %v; want %v, b expecting 4", size, ids, expected, want)
		}
	}

	// A margin past the hot copies' due date (10 days ago + 90 < now +
	// 81): every copy of both spaces is due but archived item 20 (due in
	// 165 days).
	e, src, vs := dueEnv(t)
	ids, expected := runDue(t, e, bit.Config{Coverage: src, Verdicts: vs, SkipCovered: true, CoveredMargin: 81 * day}, 1000)
	if len(ids) != 49 || expected["a"] != 20 || expected["b"] != 29 || ids[0] != "b:"+itemID(0) || slices.Contains(ids, "b:"+itemID(20)) {
		t.Errorf("margin 81d: %d queued (first %v), reports %v; want 49, b first, not b's item 20", len(ids), ids[:1], expected)
	}

	// Without SkipCovered every item of every space is queued.
	e, src, _ = dueEnv(t)
	if ids, _ := runDue(t, e, bit.Config{Coverage: src}, 1000); len(ids) != 50 {
		t.Errorf("without SkipCovered: %d queued, want 50", len(ids))
	}

	// SkipCovered needs verdicts: the bit log's, or given.
	if _, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: e.open}, BitLog: bitLogOnly{e.log}, Coverage: src, SkipCovered: true}); err == nil {
		t.Error("SkipCovered without verdicts accepted")
	}
}

// bitLogOnly hides the bit log's verdicts.
type bitLogOnly struct{ bit.BitLog }

// unordered lists a page in reverse order: a store breaking the listing
// contract.
type unordered struct{ *listing }

func (u unordered) ListContent(ctx context.Context, space, after string, limit int) ([]string, bool, error) {
	ids, more, err := u.listing.ListContent(ctx, space, after, limit)
	slices.Reverse(ids)
	return ids, more, err
}

type unorderedOpener struct{ opener }

func (o unorderedOpener) Open(ctx context.Context, account, storeID string) (storage.Provider, error) {
	return unordered{o.opener[account+"/"+storeID]}, nil
}

// TestSkipCoveredUnorderedListing: a listing page out of byte-wise order
// cannot be merged with the verdicts: its every copy is queued, none is
// hidden as within target.
func TestSkipCoveredUnorderedListing(t *testing.T) {
	e, src, vs := dueEnv(t)
	e.open["acme/1"].spaces = map[string]int{"b": 30}
	ids, expected := runDue(t, e, bit.Config{Source: bit.Source{Opener: unorderedOpener{e.open}}, Coverage: src, Verdicts: vs,
		SkipCovered: true, CoveredMargin: 24 * time.Hour}, 1000)
	if len(ids) != 30 || expected["b"] != 30 {
		t.Errorf("unordered page: %d queued, report expects %d; want all 30", len(ids), expected["b"])
	}
}

// notCovered is a Coverage that finds every space due.
type notCovered struct{}

func (notCovered) Compute(ctx context.Context, sp fixity.Space, target stores.Fixity) (fixity.Coverage, error) {
	return fixity.Coverage{Account: sp.Account, StoreID: sp.StoreID, SpaceID: sp.SpaceID, Spaces: 1, Target: target,
		Copies: 1, Overdue: 1, NeverVerified: 1}, nil
}

// TestSkipCoveredAtRest: in a store checked at rest, an archived copy
// within its archived interval is not put in the space's job, one past it
// or never verified is; a hot copy is queued only when due; the record
// counts both routes.
func TestSkipCoveredAtRest(t *testing.T) {
	c := newChecker()
	e := newEnv()
	e.reg.Accounts[0].Stores = e.reg.Accounts[0].Stores[:1]
	e.reg.Accounts[0].Stores[0].Kind = storage.KindS3
	e.open = opener{"acme/1": {spaces: map[string]int{"photos": 12}}}
	arch := &archive{listing: *e.open["acme/1"]}
	now, day := e.clk.Now(), 24*time.Hour
	// Archived (classOf): items 0, 3, 6, 9. Every copy verified 10 days
	// ago, but item 3 never, item 6 (archived) 400 days ago, item 9
	// (archived) 200 days ago, item 5 (hot) 100 days ago.
	vs := verdictList{}
	for i := range 12 {
		v := bitlog.Verdict{ContentID: itemID(i), Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: now.Add(-10 * day)}
		if classOf(i) == "GLACIER" || classOf(i) == "DEEP_ARCHIVE" {
			v.Method, v.Archived = bitlog.MethodAtRest, true
		}
		switch i {
		case 3:
			continue
		case 6:
			v.CheckedAt = now.Add(-400 * day)
		case 9:
			v.CheckedAt = now.Add(-200 * day)
		case 5:
			v.CheckedAt = now.Add(-100 * day)
		}
		vs["photos"] = append(vs["photos"], v)
	}
	ids, expected := runDue(t, e, bit.Config{Source: bit.Source{Opener: archOpener{e.open, arch}}, Coverage: notCovered{}, Verdicts: vs,
		SkipCovered: true, CoveredMargin: day,
		AtRest: &bit.AtRest{Checker: c, Log: e.log, Queue: e.bits, ReportBucket: "reports", RoleARN: "arn:aws:iam::123456789012:role/mill-batch",
			Clock: e.clk, Method: func(*stores.Store) stores.ArchivedMethod { return stores.ArchivedComputeChecksum }}}, 5)
	if !slices.Equal(ids, []string{"photos:" + itemID(5)}) || expected["photos"] != 3 {
		t.Errorf("BITs %v, report expects %d; want [photos:%s], 3 (one BIT, two at rest)", ids, expected["photos"], itemID(5))
	}
	if len(c.specs) != 1 {
		t.Fatalf("%d jobs submitted, want 1", len(c.specs))
	}
	var keys []string
	for _, o := range c.specs[0].Objects {
		keys = append(keys, o.Key)
	}
	if want := []string{"pfx/photos/" + itemID(3), "pfx/photos/" + itemID(6)}; !slices.Equal(keys, want) {
		t.Errorf("job objects %v, want %v", keys, want)
	}
}
