package workman

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// fairRun queues nA tasks of account A, then nB of account B, on one
// queue and runs them all through a Manager; it returns how many of A's
// had finished when B's last one did.
func fairRun(t *testing.T, fair bool, nA, nB int) int {
	t.Helper()
	work := memqueue.New("work", memqueue.Config{Fair: fair, VisibilityTimeout: time.Minute})
	dlq := memqueue.New("dead-letter", memqueue.Config{})
	sendAccount(t, work, "acct-a", nA)
	sendAccount(t, work, "acct-b", nB)
	var mu sync.Mutex
	doneA, doneB, aAtLastB := 0, 0, -1
	allDone := make(chan struct{})
	m, err := New(Config{
		Queues: []queue.Queue{work}, DeadLetter: dlq, Workers: 16, Logger: testLogger(t),
		Handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			mu.Lock()
			defer mu.Unlock()
			if tk.Get(task.KeyAccount) == "acct-b" {
				if doneB++; doneB == nB {
					aAtLastB = doneA
				}
			} else {
				doneA++
			}
			if doneA+doneB == nA+nB {
				close(allDone)
			}
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- m.Run(ctx) }()
	select {
	case <-allDone:
	case <-time.After(time.Minute):
		t.Error("tasks not all done within a minute")
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if dlq.Len() != 0 {
		t.Errorf("%d dead letters", dlq.Len())
	}
	return aAtLastB
}

// TestFairQueueAcceptance: with 10,000 tasks of account A queued before 100
// of account B on one queue that delivers as SQS fair queues do (memqueue
// Fair, AWS's documented behaviour), B's tasks all finish before A's
// 2,000th, through Workman's own dispatch. On a queue that delivers in send
// order (what the emulators do) they finish after all of A's: the test
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
	if plain := fairRun(t, false, nA, nB); plain != nA {
		t.Errorf("send-order queue: B's last task finished after %d of A's, want all %d", plain, nA)
	}
}
