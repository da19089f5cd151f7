// Package fleettest is the conformance suite every fleet.Registry
// implementation passes. An implementation's test calls Run with a Harness
// whose New returns a fresh, empty registry driven by a fake clock.
package fleettest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/fleet"
)

// Fixture is one fresh, empty registry and the fake clock it reads.
type Fixture struct {
	Registry fleet.Registry
	Clock    *clock.Fake
}

// Harness is the implementation under test, the one entry shape of Mill's
// conformance suites: New makes what one subtest runs on, the other
// fields (none yet) say where an implementation may differ.
type Harness struct {
	// New returns a fresh Fixture for one subtest; it registers its own
	// cleanup with t.
	New func(t *testing.T) Fixture
}

// worker is a full record written at now.
func worker(id string, now time.Time) fleet.Worker {
	return fleet.Worker{
		ID: id, Identity: process.Identity{Hostname: "host-" + id, PID: 4242, Started: now.Add(-time.Hour)},
		InstanceID: "i-0123456789abcdef0", Zone: "us-east-1a", Version: "v1.2.3", Heartbeat: now, Interval: 30 * time.Second,
		Expires: now.Add(fleet.DefaultKeepLost),
		Queues:  []string{"mill-audit", "mill-dup-high"}, Pool: 16, Held: 5,
		Running: map[string]int{"DUP": 3, "AUDIT": 1},
		Counts: map[string]fleet.Counts{
			"DUP":   {Processed: 100, Failed: 2, DeadLettered: 1},
			"AUDIT": {Processed: 7},
		},
		State: fleet.StateRunning, Pauses: []string{"type:BIT"}, Note: "",
	}
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("fleettest: Harness.New is nil")
	}
	newFixture := h.New
	ctx := context.Background()
	// A start time with sub-millisecond parts: implementations keep
	// milliseconds.
	start := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	setup := func(t *testing.T) (fleet.Registry, *clock.Fake) {
		t.Helper()
		f := newFixture(t)
		f.Clock.Set(start)
		return f.Registry, f.Clock
	}

	t.Run("EmptyRegistry", func(t *testing.T) {
		r, _ := setup(t)
		ws, err := r.Workers(ctx)
		if err != nil || len(ws) != 0 {
			t.Fatalf("Workers = %v, %v; want none", ws, err)
		}
		ps, err := r.Pauses(ctx)
		if err != nil || len(ps) != 0 {
			t.Fatalf("Pauses = %v, %v; want none", ps, err)
		}
	})

	t.Run("PutRoundTrip", func(t *testing.T) {
		r, clk := setup(t)
		w := worker("w1", clk.Now())
		if err := r.Put(ctx, w); err != nil {
			t.Fatal(err)
		}
		ws, err := r.Workers(ctx)
		if err != nil || len(ws) != 1 {
			t.Fatalf("Workers = %v, %v; want one", ws, err)
		}
		want := w
		want.Started = time.UnixMilli(w.Started.UnixMilli()).UTC()
		want.Heartbeat = time.UnixMilli(w.Heartbeat.UnixMilli()).UTC()
		want.Expires = time.Unix(w.Expires.Unix()+1, 0).UTC() // rounded up to the second
		if got := ws[0]; !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
		}
	})

	t.Run("MinimalRecord", func(t *testing.T) {
		r, clk := setup(t)
		now := clk.Now()
		w := fleet.Worker{ID: "min", Heartbeat: now, Interval: time.Second, Expires: now.Add(time.Minute), State: fleet.StateDraining}
		if err := r.Put(ctx, w); err != nil {
			t.Fatal(err)
		}
		ws, err := r.Workers(ctx)
		if err != nil || len(ws) != 1 {
			t.Fatalf("Workers = %v, %v", ws, err)
		}
		got := ws[0]
		if got.ID != "min" || got.State != fleet.StateDraining || !got.Started.IsZero() || got.Queues != nil ||
			got.Running != nil || got.Counts != nil || got.Pauses != nil || got.Hostname != "" {
			t.Fatalf("minimal record came back as %+v", got)
		}
	})

	t.Run("DegradedRoundTrip", func(t *testing.T) {
		r, clk := setup(t)
		w := worker("w1", clk.Now())
		w.State = fleet.StateDegraded
		w.Outages = []fleet.Outage{
			{Dependency: "postgres", Since: clk.Now().Add(-90 * time.Second), Cause: "dial tcp: connection refused", Types: []string{"BIT", "BIT_REPORT"}},
			{Dependency: "dynamodb localhost:4566", Since: clk.Now().Add(-time.Second), Types: []string{"AUDIT"}},
		}
		if err := r.Put(ctx, w); err != nil {
			t.Fatal(err)
		}
		ws, err := r.Workers(ctx)
		if err != nil || len(ws) != 1 {
			t.Fatalf("Workers = %v, %v; want one", ws, err)
		}
		got := ws[0]
		for i := range w.Outages {
			w.Outages[i].Since = time.UnixMilli(w.Outages[i].Since.UnixMilli()).UTC()
		}
		if got.State != fleet.StateDegraded || !reflect.DeepEqual(got.Outages, w.Outages) {
			t.Fatalf("degraded record came back as state %s, outages %+v; want %+v", got.State, got.Outages, w.Outages)
		}
	})

	t.Run("PutReplaces", func(t *testing.T) {
		r, clk := setup(t)
		w := worker("w1", clk.Now())
		if err := r.Put(ctx, w); err != nil {
			t.Fatal(err)
		}
		clk.Advance(30 * time.Second)
		w.Heartbeat = clk.Now()
		w.State = fleet.StatePaused
		w.Running = nil
		w.Counts = map[string]fleet.Counts{"DUP": {Processed: 150}}
		if err := r.Put(ctx, w); err != nil {
			t.Fatal(err)
		}
		ws, err := r.Workers(ctx)
		if err != nil || len(ws) != 1 {
			t.Fatalf("Workers = %v, %v; want one", ws, err)
		}
		if got := ws[0]; got.State != fleet.StatePaused || got.Running != nil || got.Counts["DUP"].Processed != 150 ||
			!got.Heartbeat.Equal(time.UnixMilli(clk.Now().UnixMilli())) {
			t.Fatalf("second put not in force: %+v", got)
		}
	})

	t.Run("SortedByID", func(t *testing.T) {
		r, clk := setup(t)
		for _, id := range []string{"c", "a", "b"} {
			if err := r.Put(ctx, worker(id, clk.Now())); err != nil {
				t.Fatal(err)
			}
		}
		ws, err := r.Workers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		if !reflect.DeepEqual(ids, []string{"a", "b", "c"}) {
			t.Fatalf("ids = %v, want a b c", ids)
		}
	})

	t.Run("ExpiredRecordsHidden", func(t *testing.T) {
		r, clk := setup(t)
		now := clk.Now()
		short := worker("short", now)
		short.Expires = now.Add(10 * time.Second)
		long := worker("long", now)
		if err := r.Put(ctx, short); err != nil {
			t.Fatal(err)
		}
		if err := r.Put(ctx, long); err != nil {
			t.Fatal(err)
		}
		clk.Advance(9 * time.Second)
		if ws, _ := r.Workers(ctx); len(ws) != 2 {
			t.Fatalf("before expiry: %d workers, want 2", len(ws))
		}
		clk.Advance(2 * time.Second)
		ws, err := r.Workers(ctx)
		if err != nil || len(ws) != 1 || ws[0].ID != "long" {
			t.Fatalf("after expiry: %v, %v; want only long", ws, err)
		}
	})

	t.Run("PutRefusesBadRecords", func(t *testing.T) {
		r, clk := setup(t)
		now := clk.Now()
		good := worker("ok", now)
		for name, mod := range map[string]func(*fleet.Worker){
			"no id":        func(w *fleet.Worker) { w.ID = "" },
			"lost":         func(w *fleet.Worker) { w.State = fleet.StateLost },
			"no state":     func(w *fleet.Worker) { w.State = "" },
			"no heartbeat": func(w *fleet.Worker) { w.Heartbeat = time.Time{} },
			"no expiry":    func(w *fleet.Worker) { w.Expires = time.Time{} },
			"no interval":  func(w *fleet.Worker) { w.Interval = 0 },
		} {
			w := good
			mod(&w)
			if err := r.Put(ctx, w); err == nil {
				t.Errorf("%s: Put accepted %+v", name, w)
			}
		}
		if ws, _ := r.Workers(ctx); len(ws) != 0 {
			t.Fatalf("refused records were stored: %v", ws)
		}
	})

	t.Run("PauseResume", func(t *testing.T) {
		r, clk := setup(t)
		at := clk.Now()
		dup := fleet.Pause{Kind: fleet.PauseType, Name: "DUP", By: "alice@ops", At: at, Reason: "incident 42"}
		q := fleet.Pause{Kind: fleet.PauseQueue, Name: "mill-bit", At: at}
		for _, p := range []fleet.Pause{q, dup} {
			if err := r.Pause(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		ps, err := r.Pauses(ctx)
		if err != nil {
			t.Fatal(err)
		}
		dup.At = time.UnixMilli(at.UnixMilli()).UTC()
		q.At = dup.At
		if want := []fleet.Pause{q, dup}; !reflect.DeepEqual(ps, want) {
			t.Fatalf("Pauses:\n got %+v\nwant %+v", ps, want)
		}
		// Pausing again replaces.
		dup2 := dup
		dup2.Reason, dup2.By = "still", "bob"
		if err := r.Pause(ctx, dup2); err != nil {
			t.Fatal(err)
		}
		ps, _ = r.Pauses(ctx)
		if len(ps) != 2 || ps[1].Reason != "still" || ps[1].By != "bob" {
			t.Fatalf("second pause did not replace the first: %+v", ps)
		}
		ok, err := r.Resume(ctx, fleet.PauseType, "DUP")
		if err != nil || !ok {
			t.Fatalf("Resume DUP = %v, %v; want true", ok, err)
		}
		ok, err = r.Resume(ctx, fleet.PauseType, "DUP")
		if err != nil || ok {
			t.Fatalf("second Resume DUP = %v, %v; want false, nil", ok, err)
		}
		// A queue and a type of the same name are different pauses.
		if ok, _ := r.Resume(ctx, fleet.PauseType, "mill-bit"); ok {
			t.Fatal("Resume of type mill-bit removed the queue pause")
		}
		ps, _ = r.Pauses(ctx)
		if len(ps) != 1 || ps[0].Key() != "queue:mill-bit" {
			t.Fatalf("after resume: %+v", ps)
		}
	})

	t.Run("PauseRefusesBadInput", func(t *testing.T) {
		r, _ := setup(t)
		for _, p := range []fleet.Pause{{Kind: "node", Name: "x"}, {Kind: fleet.PauseType}} {
			if err := r.Pause(ctx, p); err == nil {
				t.Errorf("Pause accepted %+v", p)
			}
		}
		if _, err := r.Resume(ctx, "", "DUP"); err == nil {
			t.Error("Resume accepted an empty kind")
		}
	})

	t.Run("WorkersAndPausesAreSeparate", func(t *testing.T) {
		r, clk := setup(t)
		if err := r.Put(ctx, worker("type:DUP", clk.Now())); err != nil {
			t.Fatal(err)
		}
		if err := r.Pause(ctx, fleet.Pause{Kind: fleet.PauseType, Name: "DUP", At: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		ws, _ := r.Workers(ctx)
		ps, _ := r.Pauses(ctx)
		if len(ws) != 1 || len(ps) != 1 {
			t.Fatalf("a worker whose ID looks like a pause key and a pause mixed: %d workers, %d pauses", len(ws), len(ps))
		}
	})

	t.Run("ConcurrentPuts", func(t *testing.T) {
		r, clk := setup(t)
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := range 20 {
			wg.Go(func() {
				if err := r.Put(ctx, worker(fmt.Sprintf("w%02d", i), clk.Now())); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := errors.Join(func() []error {
			var out []error
			for e := range errs {
				out = append(out, e)
			}
			return out
		}()...); err != nil {
			t.Fatal(err)
		}
		if ws, _ := r.Workers(ctx); len(ws) != 20 {
			t.Fatalf("%d workers after 20 concurrent puts", len(ws))
		}
	})

	t.Run("CancelledContext", func(t *testing.T) {
		r, clk := setup(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := r.Put(cctx, worker("w", clk.Now())); err == nil {
			t.Error("Put with a cancelled context succeeded")
		}
		if _, err := r.Pauses(cctx); err == nil {
			t.Error("Pauses with a cancelled context succeeded")
		}
	})

	t.Run("SnapshotShowsLost", func(t *testing.T) {
		r, clk := setup(t)
		clk.Advance(time.Millisecond - time.Duration(clk.Now().Nanosecond())%time.Millisecond) // the stored resolution: "exactly" below is exact
		now := clk.Now()
		for _, w := range []fleet.Worker{worker("alive", now), worker("silent", now)} {
			if err := r.Put(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		gone := worker("left", now)
		gone.State, gone.Expires = fleet.StateGone, now.Add(fleet.DefaultKeepGone)
		if err := r.Put(ctx, gone); err != nil {
			t.Fatal(err)
		}
		clk.Advance(fleet.LostAfter * 30 * time.Second) // exactly three intervals: not yet lost
		s, err := fleet.Read(ctx, r, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if s.Totals[fleet.StateRunning] != 2 || s.Totals[fleet.StateGone] != 1 || s.Totals[fleet.StateLost] != 0 {
			t.Fatalf("at three intervals: totals %v", s.Totals)
		}
		alive := worker("alive", clk.Now())
		if err := r.Put(ctx, alive); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		s, err = fleet.Read(ctx, r, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		states := map[string]fleet.State{}
		for _, w := range s.Workers {
			states[w.ID] = w.State
		}
		want := map[string]fleet.State{"alive": fleet.StateRunning, "silent": fleet.StateLost, "left": fleet.StateGone}
		if !reflect.DeepEqual(states, want) {
			t.Fatalf("states = %v, want %v", states, want)
		}
		if s.Totals[fleet.StateLost] != 1 || s.Totals[fleet.StateRunning] != 1 || s.Totals[fleet.StateGone] != 1 {
			t.Fatalf("totals = %v", s.Totals)
		}
	})
}
