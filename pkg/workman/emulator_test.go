package workman

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// emuQueues makes a work queue and a dead-letter queue on the emulator.
func emuQueues(t testing.TB, client *sqs.Client, vt time.Duration) (work, dlq *sqsqueue.Queue) {
	t.Helper()
	qs := emuQueueSet(t, client, vt, "work")
	return qs[0], qs[1]
}

// emuQueueSet makes the named queues (visibility timeout vt) and a
// dead-letter queue, last, under a prefix of the test's own.
func emuQueueSet(t testing.TB, client *sqs.Client, vt time.Duration, names ...string) []*sqsqueue.Queue {
	t.Helper()
	ctx := context.Background()
	prefix := testenv.Prefix(t)
	testenv.CleanupQueues(t, client, prefix)
	open := func(name string, vt time.Duration) *sqsqueue.Queue {
		if _, err := (setup.Queue{Client: client, QueueName: prefix + name, VisibilityTimeout: vt}).Ensure(ctx); err != nil {
			t.Fatalf("ensure %s: %v", name, err)
		}
		q, err := sqsqueue.Open(ctx, client, prefix+name, sqsqueue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	var out []*sqsqueue.Queue
	for _, n := range names {
		out = append(out, open(n, vt))
	}
	return append(out, open("dead-letter", 30*time.Second))
}

func sendNoops(t testing.TB, q queue.Queue, n int, props map[string]string) {
	t.Helper()
	var es []queue.SendEntry
	for i := range n {
		tk := task.New(task.TypeNoop, props)
		tk.Set("id", fmt.Sprint(i))
		b, err := task.Encode(tk, task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, queue.SendEntry{Body: b})
	}
	if err := q.Send(context.Background(), es...); err != nil {
		t.Fatal(err)
	}
}

// TestEmulatorLongTaskNotRedelivered: a task running three times the
// visibility timeout stays invisible to another consumer throughout.
func TestEmulatorLongTaskNotRedelivered(t *testing.T) {
	cfg := testenv.AWS(t)
	client := cfg.SQS()
	// A 4 s visibility timeout: extended at 2 s, so an extension call may
	// take up to 2 s on a loaded emulator (2 s left too little margin when
	// other test packages shared the machine).
	work, dlq := emuQueues(t, client, 4*time.Second)
	var runs atomic.Int32
	m, err := New(Config{
		Queues: []queue.Queue{work}, DeadLetter: dlq, Workers: 2, Logger: testLogger(t),
		Handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			runs.Add(1)
			select {
			case <-time.After(12 * time.Second):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	sendNoops(t, work, 1, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(15 * time.Second)
	for runs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if runs.Load() == 0 {
		t.Fatal("task never started")
	}
	// Another consumer polls while the task runs (12 s = 3 × the timeout).
	other := time.Now().Add(12500 * time.Millisecond)
	for time.Now().Before(other) {
		msgs, err := work.Receive(context.Background(), 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) > 0 {
			t.Fatalf("message redelivered to another consumer while its task ran (receive count %d)", msgs[0].ReceiveCount)
		}
	}
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		d, err := work.Depth(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if d.Total() == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d, _ := work.Depth(context.Background()); d.Total() != 0 {
		t.Fatalf("queue not empty after the task: %+v", d)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("task ran %d times", n)
	}
}
