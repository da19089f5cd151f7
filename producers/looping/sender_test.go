package looping_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/looping"
)

// gateQueue holds every Send until release is closed, telling arrived of
// each, and fails the failOn-th Send (1-based; 0: none).
type gateQueue struct {
	queue.Queue
	arrived chan struct{}
	release chan struct{}
	failOn  int
	mu      sync.Mutex
	calls   int
	cur     int
	max     int
}

func (g *gateQueue) Send(ctx context.Context, entries ...queue.SendEntry) error {
	g.mu.Lock()
	g.calls++
	call := g.calls
	g.cur++
	g.max = max(g.max, g.cur)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.cur--
		g.mu.Unlock()
	}()
	g.arrived <- struct{}{}
	<-g.release
	if call == g.failOn {
		return errors.New("injected send failure")
	}
	return g.Queue.Send(ctx, entries...)
}

func TestBatchesInFlightAndStateSavedAfterAll(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p := newFake([]string{"A"}, map[string]int{"A": 200}, nil)
	cfg := e.config(t, p)
	cfg.BiteSize, cfg.SendsInFlight = 100, 4
	g := &gateQueue{Queue: e.q, arrived: make(chan struct{}, 100), release: make(chan struct{})}
	cfg.Queue = g
	type result struct {
		sum looping.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := mustNew(t, cfg).Run(ctx)
		done <- result{sum, err}
	}()
	for range 4 {
		<-g.arrived // four batches of the first bite in flight at once
	}
	st, err := e.state.Load(ctx)
	switch {
	case errors.Is(err, looping.ErrNoState):
	case err != nil:
		t.Fatal(err)
	case st.Bites != 0 || st.Queued.Total() != 0:
		t.Fatalf("state saved with bites %d, queued %d while the bite's batches are in flight", st.Bites, st.Queued.Total())
	}
	close(g.release)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if got := res.sum.RunQueued.Total(); got != 200 {
		t.Errorf("queued %d, want 200", got)
	}
	if g.max != 4 {
		t.Errorf("at most %d batches in flight, want 4", g.max)
	}
	seen := map[string]bool{}
	for _, tk := range drain(t, e.q) {
		id := tk.Get(task.KeyContentID)
		if seen[id] {
			t.Errorf("%s queued twice", id)
		}
		seen[id] = true
	}
	if len(seen) != 200 {
		t.Errorf("%d distinct items on the queue, want 200", len(seen))
	}
}

// A batch that fails among others in flight fails the run without saving
// the bite; the next run sends the bite again, skipping nothing.
func TestFailedBatchInFlightRepeatsTheBite(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p := newFake([]string{"A"}, map[string]int{"A": 250}, nil)
	cfg := e.config(t, p)
	cfg.BiteSize, cfg.SendsInFlight = 100, 8
	g := &gateQueue{Queue: e.q, arrived: make(chan struct{}, 1000), release: make(chan struct{}), failOn: 13}
	close(g.release)
	cfg.Queue = g
	if _, err := mustNew(t, cfg).Run(ctx); err == nil {
		t.Fatal("run with a failed send succeeded")
	}
	st, err := e.state.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bites != 1 || st.Queued.Total() != 100 {
		t.Fatalf("after a failure in the second bite: bites %d, queued %d; want 1, 100", st.Bites, st.Queued.Total())
	}
	cfg.Queue = e.q
	if _, err := mustNew(t, cfg).Run(ctx); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, tk := range drain(t, e.q) {
		count[tk.Get(task.KeyContentID)]++
	}
	dups := 0
	for i := 1; i <= 250; i++ {
		switch c := count[itemName(i)]; {
		case c == 0:
			t.Errorf("%s never queued", itemName(i))
		case c > 1:
			dups += c - 1
		}
	}
	if dups > 100 {
		t.Errorf("%d duplicates, more than the failed bite", dups)
	}
}
