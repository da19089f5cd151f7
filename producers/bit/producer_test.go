package bit_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/lease/memlease"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
)

// listing is a storage.Provider that only lists: spaces of numbered items.
type listing struct {
	storage.Provider // nil: other methods are not used by the producer
	spaces           map[string]int
	lists            int
}

func itemID(i int) string { return fmt.Sprintf("item-%05d", i) }

func (l *listing) Kind() storage.Kind { return storage.KindFS }

func (l *listing) ListSpaces(ctx context.Context) ([]string, error) {
	var out []string
	for s := range l.spaces {
		out = append(out, s)
	}
	slices.Sort(out)
	return out, nil
}

func (l *listing) ListContent(ctx context.Context, space, after string, limit int) ([]string, bool, error) {
	l.lists++
	n, ok := l.spaces[space]
	if !ok {
		return nil, false, storage.ErrNotFound
	}
	start := 0
	if after != "" {
		i, err := strconv.Atoi(after[len("item-"):])
		if err != nil {
			return nil, false, err
		}
		start = i + 1
	}
	var ids []string
	for i := start; i < n && len(ids) < limit; i++ {
		ids = append(ids, itemID(i))
	}
	return ids, start+len(ids) < n, nil
}

type opener map[string]*listing

func (o opener) Open(ctx context.Context, account, storeID string) (storage.Provider, error) {
	l, ok := o[account+"/"+storeID]
	if !ok {
		return nil, fmt.Errorf("unknown store %s/%s", account, storeID)
	}
	return l, nil
}

type env struct {
	clk           *clock.Fake
	bits, reports *memqueue.Queue
	state         *looping.MemoryStore
	lease         *memlease.Lease
	open          opener
	reg           *stores.Registry
	log           *membitlog.Log
}

func newEnv() *env {
	clk := clock.NewFake(time.Date(2026, 5, 1, 3, 0, 0, 0, time.UTC))
	return &env{
		clk:     clk,
		bits:    memqueue.New("mill-bit", memqueue.Config{Clock: clk}),
		reports: memqueue.New("mill-bit-report", memqueue.Config{Clock: clk}),
		state:   looping.NewMemoryStore(),
		lease:   memlease.New(clk),
		log:     membitlog.New(clk),
		open: opener{
			"acme/1":    {spaces: map[string]int{"photos": 2100, "empty": 0, "x-tmp": 5}},
			"acme/2":    {spaces: map[string]int{"photos": 900}},
			"dormant/1": {spaces: map[string]int{"old": 10}},
		},
		reg: &stores.Registry{Accounts: []stores.Account{
			{ID: "acme", Status: stores.StatusActive, Stores: []stores.Store{
				{ID: "1", Primary: true, Kind: storage.KindFS, Root: "/r1"},
				{ID: "2", Kind: storage.KindFS, Root: "/r2"},
			}},
			{ID: "dormant", Status: stores.StatusInactive, Stores: []stores.Store{{ID: "1", Primary: true, Kind: storage.KindFS, Root: "/r3"}}},
		}},
	}
}

func (e *env) loop(t *testing.T, f bit.Filter, maxQueue int64) *looping.Loop {
	t.Helper()
	return e.loopWith(t, f, maxQueue, e.log)
}

func (e *env) loopWith(t *testing.T, f bit.Filter, maxQueue int64, log bit.BitLog) *looping.Loop {
	t.Helper()
	p, err := bit.New(bit.Config{Source: bit.Source{Registry: e.reg, Opener: e.open, Filter: f, Logger: slogtest.New(t, slog.LevelInfo)}, BitLog: log})
	if err != nil {
		t.Fatal(err)
	}
	l, err := looping.New(looping.Config{
		Kind:         bit.Kind,
		Producer:     p,
		Queue:        &bit.Router{Bit: e.bits, Report: e.reports},
		State:        e.state,
		Lease:        e.lease,
		MaxQueueSize: maxQueue,
		Frequency:    looping.Frequency{N: 1, Unit: looping.Days},
		Clock:        e.clk,
		Logger:       slogtest.New(t, slog.LevelWarn),
		Progress:     looping.ProgressOff,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func decodeAll(t *testing.T, q *memqueue.Queue) []*task.Task {
	t.Helper()
	var out []*task.Task
	for _, m := range q.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tk)
	}
	if err := q.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunQueuesBitsAndReports: every item of every selected space gets one
// BIT with the run ID; each space gets one BIT_REPORT on the report queue
// with the expected count, also for an empty space; inactive accounts and
// excluded spaces get nothing.
func TestRunQueuesBitsAndReports(t *testing.T) {
	e := newEnv()
	exc, err := bit.ParseFilter("exc", bytesReader("/*/*/x-*\n"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.loop(t, bit.Filter{Exclude: exc}, 100000).Run(t.Context())
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("run: %v %v", sum, err)
	}
	bits := map[string]int{}
	runIDs := map[string]bool{}
	seen := map[string]bool{}
	for _, tk := range decodeAll(t, e.bits) {
		b, err := task.BitFrom(tk)
		if err != nil {
			t.Fatal(err)
		}
		key := bit.MorselID(b.Account, b.StoreID, b.SpaceID)
		if seen[key+"/"+b.ContentID] {
			t.Errorf("%s/%s queued twice", key, b.ContentID)
		}
		seen[key+"/"+b.ContentID] = true
		bits[key]++
		runIDs[b.RunID] = true
	}
	want := map[string]int{"acme/1/photos": 2100, "acme/2/photos": 900}
	if fmt.Sprint(bits) != fmt.Sprint(want) {
		t.Errorf("BITs per space = %v, want %v", bits, want)
	}
	if len(runIDs) != 1 || !runIDs[sum.RunID] || sum.RunID != "20260501T030000Z" {
		t.Errorf("run IDs on BITs %v, summary %q", runIDs, sum.RunID)
	}
	reports := map[string]int64{}
	for _, tk := range decodeAll(t, e.reports) {
		r, err := task.BitReportFrom(tk)
		if err != nil {
			t.Fatal(err)
		}
		if r.RunID != sum.RunID || r.Expected == nil {
			t.Errorf("report %+v", r)
			continue
		}
		reports[bit.MorselID(r.Account, r.StoreID, r.SpaceID)] = *r.Expected
	}
	wantR := map[string]int64{"acme/1/empty": 0, "acme/1/photos": 2100, "acme/2/photos": 900}
	if fmt.Sprint(reports) != fmt.Sprint(wantR) {
		t.Errorf("reports = %v, want %v", reports, wantR)
	}
	if sum.Queued["BIT"]["acme"] != 3000 || sum.Queued["BIT_REPORT"]["acme"] != 3 {
		t.Errorf("summary counts %v", sum.Queued)
	}
	if e.open["dormant/1"].lists != 0 {
		t.Error("inactive account listed")
	}
}

// TestQueueFullResumesWithSameRun: a full bit queue stops the invocation;
// the next one carries on with the same run ID, and the report's expected
// count covers the items of every invocation. Reports do not count
// towards the bit queue's depth.
func TestQueueFullResumesWithSameRun(t *testing.T) {
	e := newEnv()
	inc, err := bit.ParseFilter("inc", bytesReader("/acme/1/photos\n/acme/1/empty\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := e.loop(t, bit.Filter{Include: inc}, 1500)
	var all []*task.Task
	var runID string
	for i := 0; ; i++ {
		sum, err := l.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if runID == "" {
			runID = sum.RunID
		} else if sum.RunID != runID {
			t.Fatalf("run ID changed: %q then %q", runID, sum.RunID)
		}
		all = append(all, decodeAll(t, e.bits)...) // workers drain the queue
		e.clk.Advance(time.Minute)
		if sum.Stopped == looping.StopDone {
			break
		}
		if sum.Stopped != looping.StopQueueFull || i > 5 {
			t.Fatalf("invocation %d: %v", i, sum)
		}
	}
	if len(all) != 2100 {
		t.Errorf("%d BITs, want 2100", len(all))
	}
	for _, tk := range all {
		if tk.Get(task.KeyRunID) != runID {
			t.Fatalf("BIT with run %q, want %q", tk.Get(task.KeyRunID), runID)
		}
	}
	reports := decodeAll(t, e.reports)
	if len(reports) != 2 {
		t.Fatalf("%d reports", len(reports))
	}
	for _, tk := range reports {
		r, _ := task.BitReportFrom(tk)
		if r.SpaceID == "photos" && *r.Expected != 2100 || r.SpaceID == "empty" && *r.Expected != 0 {
			t.Errorf("report %s expected %d", r.SpaceID, *r.Expected)
		}
	}
}

// TestStoreErrorFailsRunStart: when no store can be opened the start of
// the run fails (the next invocation tries again) rather than completing a
// run that checked nothing. (One store failing among others: see
// TestBrokenStoreIsolated.)
func TestStoreErrorFailsRunStart(t *testing.T) {
	e := newEnv()
	delete(e.open, "acme/1")
	delete(e.open, "acme/2")
	if _, err := e.loop(t, bit.Filter{}, 100000).Run(t.Context()); err == nil {
		t.Fatal("run succeeded without any store")
	}
	if e.bits.Len() != 0 || e.reports.Len() != 0 {
		t.Error("tasks queued")
	}
}

// TestSpaceVanishing: a space deleted mid-run ends its morsel without a
// report.
func TestSpaceVanishing(t *testing.T) {
	e := newEnv()
	inc, _ := bit.ParseFilter("inc", bytesReader("/acme/1/photos\n"))
	l := e.loop(t, bit.Filter{Include: inc}, 1000)
	if sum, err := l.Run(t.Context()); err != nil || sum.Stopped != looping.StopQueueFull {
		t.Fatalf("%v %v", sum, err)
	}
	delete(e.open["acme/1"].spaces, "photos")
	decodeAll(t, e.bits)
	if sum, err := l.Run(t.Context()); err != nil || sum.Stopped != looping.StopDone {
		t.Fatalf("%v %v", sum, err)
	}
	if e.reports.Len() != 0 {
		t.Error("report queued for a vanished space")
	}
}

// orderLog is a bit log that notes, when a space's listing is recorded as
// finished, whether its BIT_REPORT was already queued, and fails the
// finish of the spaces in failFinish.
type orderLog struct {
	*membitlog.Log
	reports    *memqueue.Queue
	early      []string // spaces whose report was queued before the record
	failFinish map[string]bool
}

func (o *orderLog) FinishSpace(ctx context.Context, s bitlog.RunSpace) error {
	if o.failFinish[s.SpaceID] {
		return fmt.Errorf("the database is down")
	}
	for _, m := range o.reports.Messages() {
		if tk, err := task.Decode(m.Body); err == nil && tk.Get("spaceId") == s.SpaceID && tk.Get("storeId") == s.StoreID {
			o.early = append(o.early, s.Key())
		}
	}
	return o.Log.FinishSpace(ctx, s)
}

// TestRunIsRecordedBeforeItsReports: every space of the run is recorded in
// the bit log (bitlog.Runs) with the number of items listed — across
// invocations, for an empty space too — before its BIT_REPORT is queued;
// a space whose record cannot be written gets no BIT_REPORT.
func TestRunIsRecordedBeforeItsReports(t *testing.T) {
	e := newEnv()
	o := &orderLog{Log: e.log, reports: e.reports}
	inc, err := bit.ParseFilter("inc", bytesReader("/acme/*/photos\n/acme/1/empty\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := e.loopWith(t, bit.Filter{Include: inc}, 1500, o)
	var runID string
	for i := 0; ; i++ {
		sum, err := l.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		runID = sum.RunID
		decodeAll(t, e.bits)
		e.clk.Advance(time.Minute)
		if sum.Stopped == looping.StopDone {
			break
		}
		if i > 5 {
			t.Fatalf("invocation %d: %v", i, sum)
		}
	}
	if len(o.early) != 0 {
		t.Errorf("BIT_REPORT queued before the run's record: %v", o.early)
	}
	for space, want := range map[string]int64{"acme/1/photos": 2100, "acme/1/empty": 0, "acme/2/photos": 900} {
		var acc, st, sp string
		fmt.Sscanf(strings.ReplaceAll(space, "/", " "), "%s %s %s", &acc, &st, &sp)
		rec, err := e.log.RunSpace(t.Context(), runID, acc, st, sp)
		if err != nil || !rec.Done() || rec.Expected != want {
			t.Errorf("%s: record %+v %v, want %d items listed", space, rec, err, want)
		}
		if !rec.Started.Before(rec.Listed) && space == "acme/1/photos" {
			t.Errorf("%s: started %s, listed %s: the start of the first invocation is kept", space, rec.Started, rec.Listed)
		}
	}
	if len(decodeAll(t, e.reports)) != 3 {
		t.Error("not one report per space")
	}

	// The record cannot be written: no report for that space (the bite
	// fails; a later one retries it).
	e2 := newEnv()
	o2 := &orderLog{Log: e2.log, reports: e2.reports, failFinish: map[string]bool{"empty": true}}
	only, _ := bit.ParseFilter("inc", bytesReader("/acme/1/empty\n"))
	_, _ = e2.loopWith(t, bit.Filter{Include: only}, 1500, o2).Run(t.Context())
	if e2.reports.Len() != 0 {
		t.Error("BIT_REPORT queued without the run's record")
	}
}
