package wiring

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
)

// outcomeObserver is both the manager's and the chain's observer; it
// signals every outcome on its channels.
type outcomeObserver struct {
	done chan string // task type/result of every task the chain saw
	dead chan string // task type/reason of every dead letter
}

func (o *outcomeObserver) Received(string, int) {}
func (o *outcomeObserver) InFlight(int)         {}
func (o *outcomeObserver) DeadLettered(t task.Type, reason string) {
	o.dead <- string(t) + "/" + reason
}
func (o *outcomeObserver) TaskDone(t task.Type, result string, _ time.Duration) {
	o.done <- string(t) + "/" + result
}

func send(t *testing.T, q queue.Queue, tk *task.Task) {
	t.Helper()
	b, err := task.Encode(tk, task.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Send(context.Background(), queue.SendEntry{Body: b}); err != nil {
		t.Fatal(err)
	}
}

func recv(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(30 * time.Second):
		t.Fatal("no outcome within 30s")
		return ""
	}
}

// TestWorkmanReceivesFromEveryWorkQueueByDefault: with no queues given, the
// manager receives from the Deps' work queues (here the lowest, bit), runs
// the task through the chain (whose observer is the manager's) and
// dead-letters a task of a type it does not serve to the Deps' dead-letter
// queue.
func TestWorkmanReceivesFromEveryWorkQueueByDefault(t *testing.T) {
	d := memDeps(t)
	obs := &outcomeObserver{done: make(chan string, 4), dead: make(chan string, 4)}
	m, err := Workman(d, WorkmanConfig{Types: []task.Type{task.TypeNoop}, Manager: workman.Config{
		Workers: 1, ReceiveWait: time.Millisecond, IdlePollWait: 10 * time.Millisecond,
		MaxAttempts: 1, Observer: obs, WorkerID: "test",
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	defer func() { cancel(); <-ran }()

	send(t, d.Queues[queue.KeyBit], task.New(task.TypeNoop, nil))
	if got := recv(t, obs.done); got != "NOOP/"+processors.ResultSuccess {
		t.Fatalf("outcome %q, want NOOP/%s", got, processors.ResultSuccess)
	}
	send(t, d.Queues[queue.KeyAudit], task.New(task.TypeAudit, nil))
	if got := recv(t, obs.dead); !strings.HasPrefix(got, "AUDIT/") {
		t.Fatalf("dead letter %q, want an AUDIT one", got)
	}
	depth, err := d.Queues[queue.KeyDeadLetter].Depth(context.Background())
	if err != nil || depth.Total() != 1 {
		t.Fatalf("dead-letter queue depth %+v, %v; want 1", depth, err)
	}
}

// TestWorkmanNamesAMissingQueue: Deps without a dead-letter queue are an
// error naming it, not a manager without one.
func TestWorkmanNamesAMissingQueue(t *testing.T) {
	d := memDeps(t)
	delete(d.Queues, queue.KeyDeadLetter)
	if _, err := Workman(d, WorkmanConfig{Types: []task.Type{task.TypeNoop}}); err == nil || !strings.Contains(err.Error(), "no dead-letter queue") {
		t.Fatalf("err = %v; want one naming the dead-letter queue", err)
	}
}
