package dup_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/dup"
	"github.com/millfleet/mill/producers/looping"
)

// killAfter is a queue whose invocation is killed (its context
// cancelled) after it accepted n batches.
type killAfter struct {
	*memqueue.Queue
	mu       sync.Mutex // batches are sent in parallel (SendsInFlight)
	n, sends int
	kill     context.CancelFunc
}

func (k *killAfter) Send(ctx context.Context, es ...queue.SendEntry) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sends == k.n {
		k.kill()
		return ctx.Err()
	}
	k.sends++
	return k.Queue.Send(ctx, es...)
}

// TestRestartsFasterThanTheDeleteStep: a producer invocation that is
// killed every time before it could queue all the deletes of a space
// still makes progress, saved bite by bite: the run completes, and no
// delete task is sent more than twice (once, and once again for the bite
// cut short by the kill) — instead of the delete step starting over, and
// re-sending its first tasks, at every invocation.
func TestRestartsFasterThanTheDeleteStep(t *testing.T) {
	f := newFixtureWith(t, 10, `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	var ids []string
	for i := range 95 {
		ids = append(ids, fmt.Sprintf("gone-%03d", i))
	}
	fill(t, f.stores["acme/2"], "a", ids...) // at the destination only: 95 deletes for morsel a
	prod, err := dup.New(dup.Config{Registry: f.reg, Policies: f.policies, Opener: f.opener, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	q := memqueue.New("mill-dup-low", memqueue.Config{Clock: clk})
	state := looping.NewMemoryStore()
	done := false
	for inv := 1; inv <= 40 && !done; inv++ {
		ctx, cancel := context.WithCancel(t.Context())
		kq := &killAfter{Queue: q, n: 3, kill: cancel}
		loop, err := looping.New(looping.Config{Kind: dup.Kind, Producer: prod, Queue: kq, State: state, Lease: memlease.New(clk),
			Frequency: looping.Frequency{N: 7, Unit: looping.Days}, BiteSize: 10, MaxQueueSize: 1 << 20,
			Clock: clk, Logger: slog.New(slog.DiscardHandler), Progress: looping.ProgressOff})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := loop.Run(ctx)
		cancel()
		done = err == nil && sum.Stopped == looping.StopDone
	}
	if !done {
		t.Fatalf("the run never completed: %d tasks sent, the same deletes again and again", q.Len())
	}
	sent := map[string]int{}
	for _, m := range q.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		sent[tk.Get(task.KeySpaceID)+"/"+tk.Get(task.KeyContentID)]++
	}
	for _, id := range ids {
		if n := sent["a/"+id]; n < 1 || n > 2 {
			t.Errorf("delete of %s sent %d times", id, n)
		}
	}
}
