package looping_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/memruns"
	"github.com/millfleet/mill/producers/looping"
)

// TestRunRecorded: a run over several invocations (the queue fills) is
// recorded once, under the producer's kind, with the tasks queued so far
// after each invocation and its final count once the last morsel is done;
// every task carries the run's ID.
func TestRunRecorded(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A", "B"}, map[string]int{"A": 25, "B": 15}, map[string]int{"A": 3})
	cfg := e.config(t, fakeDeleter{p})
	cfg.BiteSize, cfg.MaxQueueSize = 10, 20
	store := memruns.New(e.clk)
	cfg.Runs = &runs.Recorder{Store: store, Clock: e.clk, Logger: testLogger(t)}
	ctx := context.Background()

	sum, err := mustNew(t, cfg).Run(ctx)
	if err != nil || sum.Stopped != looping.StopQueueFull {
		t.Fatalf("first invocation: %+v %v, want a full queue", sum.Stopped, err)
	}
	st, err := store.Get(ctx, runs.ProducerDup, sum.RunID)
	if err != nil || st.Enqueued != 23 || !st.Listed.IsZero() || st.Scope != "2 morsels" {
		t.Fatalf("after the first invocation: %+v %v, want 23 queued, still listing", st, err)
	}
	var ids []string
	for _, tk := range drain(t, e.q) {
		ids = append(ids, tk.RunID())
	}
	for e.clk.Advance(time.Minute); sum.Stopped != looping.StopDone; e.clk.Advance(time.Minute) {
		if sum, err = mustNew(t, cfg).Run(ctx); err != nil {
			t.Fatal(err)
		}
		for _, tk := range drain(t, e.q) {
			ids = append(ids, tk.RunID())
		}
	}
	if len(ids) != 43 {
		t.Fatalf("%d tasks queued, want 43", len(ids))
	}
	for _, id := range ids {
		if id != sum.RunID {
			t.Fatalf("a task carries run %q, want %q", id, sum.RunID)
		}
	}
	st, err = store.Get(ctx, runs.ProducerDup, sum.RunID)
	if err != nil || st.Enqueued != 43 || st.Listed.IsZero() || !st.Started.Equal(sum.RunStart) {
		t.Fatalf("finished run %+v %v, want 43 queued, listed, started at %s", st, err, sum.RunStart)
	}
	if l, _ := store.List(ctx, 10); len(l) != 1 {
		t.Fatalf("%d runs recorded, want 1", len(l))
	}
}

// TestRunNotRecordedNoBite: when the run cannot be recorded, the
// invocation fails before it queues anything (a task must never claim a
// run the record does not have).
func TestRunNotRecordedNoBite(t *testing.T) {
	e := newEnv(t)
	p := newFake([]string{"A"}, map[string]int{"A": 5}, nil)
	cfg := e.config(t, p)
	cfg.Runs = downRecorder{}
	if _, err := mustNew(t, cfg).Run(context.Background()); err == nil {
		t.Fatal("run record down: no error")
	}
	if n := len(e.q.Messages()); n != 0 || p.bites != 0 {
		t.Fatalf("%d tasks queued, %d bites, want none", n, p.bites)
	}
}

type downRecorder struct{}

func (downRecorder) Start(context.Context, runs.Run) error { return errors.New("connection refused") }
func (downRecorder) Enqueued(context.Context, string, string, int64) error {
	return errors.New("connection refused")
}
func (downRecorder) Listed(context.Context, string, string, int64, time.Time) error {
	return errors.New("connection refused")
}
