package workman

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
)

// abCount is a handler counting the finished tasks of accounts acct-a and
// acct-b; all is closed when every one of them has finished.
type abCount struct {
	mu           sync.Mutex
	nA, nB       int
	doneA, doneB int
	aAtLastB     int // A's finished when B's last one did; -1 before
	all          chan struct{}
}

func newABCount(nA, nB int) *abCount {
	return &abCount{nA: nA, nB: nB, aAtLastB: -1, all: make(chan struct{})}
}

func (c *abCount) Handle(_ context.Context, tk *task.Task) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tk.Get(task.KeyAccount) == "acct-b" {
		if c.doneB++; c.doneB == c.nB {
			c.aAtLastB = c.doneA
		}
	} else {
		c.doneA++
	}
	if c.doneA+c.doneB == c.nA+c.nB {
		close(c.all)
	}
	return nil
}

// runUntil runs a Manager of cfg until done is closed (an error after
// within) and stops it.
func runUntil(t *testing.T, cfg Config, done <-chan struct{}, within time.Duration) {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- m.Run(ctx) }()
	select {
	case <-done:
	case <-time.After(within):
		t.Errorf("not done within %v", within)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// fairRun queues nA tasks of account A, then nB of account B, on one
// queue and runs them all through a Manager; it returns how many of A's
// had finished when B's last one did.
func fairRun(t *testing.T, fair bool, nA, nB int) int {
	t.Helper()
	work := memqueue.New("work", memqueue.Config{Fair: fair, VisibilityTimeout: time.Minute})
	dlq := memqueue.New("dead-letter", memqueue.Config{})
	sendAccount(t, work, "acct-a", nA)
	sendAccount(t, work, "acct-b", nB)
	c := newABCount(nA, nB)
	runUntil(t, Config{Queues: []queue.Queue{work}, DeadLetter: dlq, Workers: 16, Logger: testLogger(t), Handler: c}, c.all, time.Minute)
	if dlq.Len() != 0 {
		t.Errorf("%d dead letters", dlq.Len())
	}
	return c.aAtLastB
}

// TestFairQueueAcceptance: with 10,000 tasks of account A queued before 100
// of account B on one queue that delivers as SQS fair queues do (memqueue
// Fair, AWS's documented behaviour), B's tasks all finish before A's
// 2,000th, through Workman's own dispatch. On a queue that delivers in send
// order (what the emulators do) they finish after (nearly) all of A's: the test
// tells the two apart.
func TestFairQueueAcceptance(t *testing.T) {
	const nA, nB = 10000, 100
	got := fairRun(t, true, nA, nB)
	t.Logf("fair queue: B's last task finished after %d of A's", got)
	if got < 0 || got >= 2000 {
		t.Errorf("B's last task finished after %d of A's tasks, want fewer than 2,000", got)
	}
	if testing.Short() {
		return
	}
	// In send order B's tasks come in the last batches, where Workman's
	// round robin may still finish a few of A's last ones after them.
	if plain := fairRun(t, false, nA, nB); plain < nA-2*16 {
		t.Errorf("send-order queue: B's last task finished after %d of A's, want nearly all %d", plain, nA)
	}
}
