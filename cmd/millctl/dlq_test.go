package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"

	"github.com/millfleet/mill/internal/testkit/slogtest"
)

// opsEnv is one test's seven queues under a unique prefix.
type opsEnv struct {
	t      *testing.T
	prefix string
	api    *sqs.Client
	mu     sync.Mutex
	queues map[string]*sqsqueue.Queue
}

// newOpsEnv creates the seven queues (work queues redriving to the
// dead-letter queue) with a short visibility timeout.
func newOpsEnv(t *testing.T) *opsEnv {
	t.Helper()
	cfg := testenv.AWS(t)
	e := &opsEnv{t: t, prefix: testenv.Prefix(t), api: cfg.SQS(), queues: map[string]*sqsqueue.Queue{}}
	testenv.CleanupQueues(t, e.api, e.prefix)
	ctx := context.Background()
	dlq := queue.Name(e.prefix, queue.KeyDeadLetter)
	if _, err := (setup.Queue{Client: e.api, QueueName: dlq, VisibilityTimeout: 10 * time.Second}).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range queue.DefaultPriority {
		if _, err := (setup.Queue{Client: e.api, QueueName: queue.Name(e.prefix, key), VisibilityTimeout: 10 * time.Second, DeadLetter: dlq}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *opsEnv) queue(key string) *sqsqueue.Queue {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if q, ok := e.queues[key]; ok {
		return q
	}
	q, err := sqsqueue.Open(context.Background(), e.api, queue.Name(e.prefix, key), sqsqueue.Config{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.queues[key] = q
	return q
}

func (e *opsEnv) depth(key string) queue.Depth {
	e.t.Helper()
	d, err := e.queue(key).Depth(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// millctl runs a command with this env's prefix and the given stdin.
func (e *opsEnv) millctl(stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, stdin: strings.NewReader(stdin), logger: slogtest.New(e.t, slog.LevelInfo),
		getenv: func(k string) string {
			if k == "MILL_QUEUE_PREFIX" {
				return e.prefix
			}
			if strings.HasPrefix(k, "MILL_") {
				return ""
			}
			return os.Getenv(k)
		}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, a, args)
	e.t.Logf("millctl %s → %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return code, out.String(), errb.String()
}

func (e *opsEnv) must(stdin string, args ...string) string {
	e.t.Helper()
	code, out, errOut := e.millctl(stdin, args...)
	if code != 0 {
		e.t.Fatalf("millctl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// startManager runs a workman.Manager on the dup-low queue with h and
// short retry delays; stop it with the returned function.
func (e *opsEnv) startManager(h processors.HandlerFunc) (stop func()) {
	e.t.Helper()
	m, err := workman.New(workman.Config{
		Queues: []queue.Queue{e.queue(queue.KeyDupLow)}, DeadLetter: e.queue(queue.KeyDeadLetter), Handler: h,
		Workers: 16, MaxAttempts: 3,
		// SQS delays are whole seconds: every retry waits 1 s.
		RetryBase: time.Millisecond, RetryMax: time.Second,
		QueueBackoffMin: 100 * time.Millisecond, QueueBackoffMax: 200 * time.Millisecond,
		IdlePollWait: time.Second,
		DeleteFlush:  100 * time.Millisecond, GracePeriod: 5 * time.Second,
		Logger: slogtest.New(e.t, slog.LevelError),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("manager: %v", err)
		}
	}
}

// TestDLQRedriveAcceptance: 100 tasks fail three times and land on the
// dead-letter queue; once the processor is fixed, dlq redrive returns them
// and workman completes every one; the dead-letter queue ends empty.
func TestDLQRedriveAcceptance(t *testing.T) {
	e := newOpsEnv(t)
	start := time.Now()
	out := e.must("", "enqueue", "--type", "NOOP", "--queue", "dup-low", "--count", "100")
	if !strings.Contains(out, "enqueue: 100 sent to "+e.prefix+"dup-low") {
		t.Fatalf("enqueue: %q", out)
	}

	var mu sync.Mutex
	attempts := map[string]int{}
	stop := e.startManager(func(_ context.Context, tk *task.Task) error {
		mu.Lock()
		attempts[tk.Get("id")]++
		mu.Unlock()
		return errors.New("store unavailable")
	})
	// The emulator on a loaded 2-core machine is slow: workman sends each
	// retry and dead letter on its own, ~400 sends for 100 tasks.
	testbin.WaitFor(t, 2*time.Minute, "100 dead letters", func() bool {
		dl := e.depth(queue.KeyDeadLetter)
		mu.Lock()
		hist := map[int]int{}
		for _, n := range attempts {
			hist[n]++
		}
		mu.Unlock()
		t.Logf("%v: dead-letter %+v, runs per task %v", time.Since(start).Round(time.Second), dl, hist)
		return dl.Visible >= 100
	})
	stop()
	t.Logf("100 tasks dead-lettered in %v", time.Since(start))
	mu.Lock()
	for id, n := range attempts {
		if n != 3 {
			t.Errorf("task %s ran %d times, want 3", id, n)
		}
	}
	if len(attempts) != 100 {
		t.Errorf("%d tasks ran, want 100", len(attempts))
	}
	mu.Unlock()
	if d := e.depth(queue.KeyDupLow); d.Total() != 0 {
		t.Fatalf("dup-low after failing: %+v", d)
	}

	out = e.must("", "dlq", "list", "--limit", "0")
	if !strings.Contains(out, "100 matching of 100 looked at") || strings.Count(out, "store unavailable") != 100 {
		t.Fatalf("dlq list:\n%s", out)
	}
	testbin.WaitFor(t, 10*time.Second, "listed messages visible again", func() bool { return e.depth(queue.KeyDeadLetter).Visible == 100 })

	// The processor is fixed.
	completed := map[string]int{}
	stop = e.startManager(func(_ context.Context, tk *task.Task) error {
		if tk.Attempts != 0 {
			return processors.Permanentf("attempts %d, want 0 after a redrive", tk.Attempts)
		}
		mu.Lock()
		completed[tk.Get("id")]++
		mu.Unlock()
		return nil
	})
	defer stop()
	out = e.must("", "dlq", "redrive", "--source", "dup-low")
	if !regexp.MustCompile(`redrive: 100 redriven, 0 failed, 0 skipped \(no source queue\), 0 not matching`).MatchString(out) {
		t.Fatalf("redrive: %s", out)
	}
	testbin.WaitFor(t, time.Minute, "100 completed tasks", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(completed) == 100
	})
	testbin.WaitFor(t, 15*time.Second, "empty queues", func() bool {
		return e.depth(queue.KeyDeadLetter).Total() == 0 && e.depth(queue.KeyDupLow).Total() == 0
	})
	t.Logf("acceptance took %v", time.Since(start))
}

// deadLetters puts hand-made dead letters on the dead-letter queue.
func (e *opsEnv) deadLetters(ds ...*deadletter.Letter) {
	e.t.Helper()
	var entries []queue.SendEntry
	for _, d := range ds {
		en, err := deadletter.Encode(d)
		if err != nil {
			e.t.Fatal(err)
		}
		entries = append(entries, en)
	}
	if err := e.queue(queue.KeyDeadLetter).Send(context.Background(), entries...); err != nil {
		e.t.Fatal(err)
	}
}

func TestDLQListShowPurge(t *testing.T) {
	e := newOpsEnv(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ds []*deadletter.Letter
	for i := range 3 {
		body, _ := task.Encode(task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "photos", ContentID: fmt.Sprintf("img-%d.jpg", i), Attempts: 2}.Task(), task.FormatJSON)
		ds = append(ds, &deadletter.Letter{Body: body, Reason: deadletter.ReasonFailed, Error: "dup: copy: AccessDenied: the destination bucket policy refuses PutObject for this role " + strings.Repeat("x", 80),
			TaskType: task.TypeDup, Processor: "dup", SourceQueue: e.prefix + "dup-high", Attempts: 3, Worker: "w1", Time: now, MessageID: fmt.Sprintf("src-dup-%d", i)})
	}
	for i := range 2 {
		body, _ := task.Encode(task.Bit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: fmt.Sprintf("doc-%d", i)}.Task(), task.FormatProperties)
		ds = append(ds, &deadletter.Letter{Body: body, Reason: deadletter.ReasonFailed, Error: "bit: context deadline exceeded (timeout)",
			TaskType: task.TypeBit, Processor: "bit", SourceQueue: e.prefix + "bit", Attempts: 3, Worker: "w2", Time: now, MessageID: fmt.Sprintf("src-bit-%d", i)})
	}
	e.deadLetters(ds...)

	out := e.must("", "dlq", "list", "--type", "dup")
	if !strings.Contains(out, "3 matching of 5 looked at") || strings.Count(out, e.prefix+"dup-high") != 3 ||
		!strings.Contains(out, "2026-01-02T03:04:05Z") || strings.Contains(out, "xxxxxxxxxxxxxxxxxxxxxxxxxxx") {
		t.Fatalf("list --type dup:\n%s", out)
	}
	if !strings.HasPrefix(out, "ID") || !strings.Contains(out, "ERROR") {
		t.Errorf("no header:\n%s", out)
	}
	out = e.must("", "dlq", "list", "--error", "TIMEOUT", "--limit", "1")
	if !strings.Contains(out, "1 matching of") || !strings.Contains(out, "BIT") {
		t.Fatalf("list --error --limit:\n%s", out)
	}
	testbin.WaitFor(t, 5*time.Second, "messages visible again", func() bool { return e.depth(queue.KeyDeadLetter).Visible == 5 })

	// show, by the source message ID.
	out = e.must("", "dlq", "show", "src-bit-1")
	for _, want := range []string{"reason:", "failed", "task type:", "BIT", "source queue:", e.prefix + "bit", "attempts:", "src-bit-1",
		"bit: context deadline exceeded (timeout)", "task (properties):", "contentId=doc-1", "spaceId=photos", "body:\n  #"} {
		if !strings.Contains(out, want) {
			t.Errorf("show: no %q in\n%s", want, out)
		}
	}
	if code, _, errOut := e.millctl("", "dlq", "show", "nope"); code != 1 || !strings.Contains(errOut, "no message nope") {
		t.Errorf("show of a missing ID: %d %s", code, errOut)
	}

	out = e.must("", "dlq", "redrive", "--dry-run", "--type", "DUP")
	if !strings.Contains(out, "redrive: 3 would be redriven, 0 failed, 0 skipped (no source queue), 2 not matching") ||
		strings.Count(out, "→ "+e.prefix+"dup-high") != 3 {
		t.Fatalf("dry run: %s", out)
	}
	testbin.WaitFor(t, 5*time.Second, "messages visible again", func() bool { return e.depth(queue.KeyDeadLetter).Visible == 5 })

	// purge with filters: "n" cancels, "y" deletes only the matches.
	code, out, errOut := e.millctl("n\n", "dlq", "purge", "--type", "BIT")
	if code != 0 || !strings.Contains(errOut, "Delete 2 matching messages") || !strings.Contains(out, "cancelled, nothing deleted") {
		t.Fatalf("purge declined: %d %s %s", code, out, errOut)
	}
	testbin.WaitFor(t, 5*time.Second, "messages visible again", func() bool { return e.depth(queue.KeyDeadLetter).Visible == 5 })
	if out = e.must("yes\n", "dlq", "purge", "--type", "BIT"); !strings.Contains(out, "purge: 2 deleted, 0 failed") {
		t.Fatalf("purge --type BIT: %s", out)
	}
	testbin.WaitFor(t, 5*time.Second, "3 left", func() bool { d := e.depth(queue.KeyDeadLetter); return d.Visible == 3 && d.Total() == 3 })

	// purge everything: no answer cancels; --yes purges.
	if code, out, _ = e.millctl("", "dlq", "purge"); code != 0 || !strings.Contains(out, "cancelled") {
		t.Fatalf("purge without an answer: %d %s", code, out)
	}
	if out = e.must("", "dlq", "purge", "--yes"); !strings.Contains(out, "purged (about 3 messages") {
		t.Fatalf("purge --yes: %s", out)
	}
	testbin.WaitFor(t, 10*time.Second, "an empty dead-letter queue", func() bool { return e.depth(queue.KeyDeadLetter).Total() == 0 })
}

// TestDLQRedriveOnlyToMillQueues: a dead letter naming a source queue that
// is not one of Mill's work queues under the prefix (a forged envelope the
// SQS redrive policy moved here, or a queue of another system) is refused
// by redrive and stays; --to names a target for it. Before redrive checked
// the source queue it sent the task wherever the message said.
func TestDLQRedriveOnlyToMillQueues(t *testing.T) {
	e := newOpsEnv(t)
	ctx := context.Background()
	elsewhere := e.prefix + "elsewhere"
	if _, err := (setup.Queue{Client: e.api, QueueName: elsewhere, VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	body, _ := task.Encode(task.New(task.TypeNoop, map[string]string{"id": "forged"}), task.FormatJSON)
	e.deadLetters(&deadletter.Letter{Body: body, Reason: deadletter.ReasonFailed, Error: "x", TaskType: task.TypeNoop,
		SourceQueue: elsewhere, Attempts: 3, Worker: "w", Time: time.Now(), MessageID: "src-forged"})
	code, out, errOut := e.millctl("", "dlq", "redrive")
	if code == 0 || !strings.Contains(out, "0 redriven, 1 failed") || !strings.Contains(errOut, "not one of Mill's work queues") {
		t.Errorf("redrive to a foreign source queue: exit %d\n%s\n%s", code, out, errOut)
	}
	q, err := sqsqueue.Open(ctx, e.api, elsewhere, sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := q.Depth(ctx); err != nil || d.Total() != 0 {
		t.Fatalf("the foreign queue after the redrive: %+v, %v", d, err)
	}
	testbin.WaitFor(t, 15*time.Second, "the dead letter visible again", func() bool { return e.depth(queue.KeyDeadLetter).Visible == 1 })
	if out := e.must("", "dlq", "redrive", "--to", "dup-low"); !strings.Contains(out, "1 redriven, 0 failed") {
		t.Fatalf("redrive --to dup-low: %s", out)
	}
	if d := e.depth(queue.KeyDupLow); d.Total() != 1 {
		t.Errorf("dup-low after redrive --to: %+v", d)
	}
}
