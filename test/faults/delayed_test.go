//go:build faults

package faults

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/noop"
)

// TestDelayedRetriesStartWhenDue: the workman binary receives from six
// queues, the NOOP work queue last; a burst of NOOP tasks that fail their
// first attempt is retried with Workman's production delay (10 s), and the
// workman is otherwise idle by then. Every retry starts within 5 s of its
// delay's end — not when the idle rotation, one 20 s long poll at a time
// round six queues, comes to the work queue again.
func TestDelayedRetriesStartWhenDue(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := binary(t, "workman")
	prefix, work, dead := noopQueues(t, ctx, cfg, 30*time.Second)
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	logPath := filepath.Join(dir, "workman.log")
	args := workmanArgs(prefix, work.Name(), dead.Name(), record, 8)
	i := slices.Index(args, "--queues")
	args[i+1] = "audit,dup-high,dup-low,bit-error,bit-report," + work.Name()
	n := scaled(60, 30)
	entries := make([]queue.SendEntry, 0, n)
	for k := range n {
		body, err := task.Encode(task.New(task.TypeNoop, map[string]string{noop.KeyID: noopID(k), noop.KeyFail: "1"}), task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, queue.SendEntry{Body: body})
	}
	for lo := 0; lo < n; lo += queue.MaxBatch {
		if err := work.Send(ctx, entries[lo:min(lo+queue.MaxBatch, n)]...); err != nil {
			t.Fatal(err)
		}
	}
	// Started on the burst: every queue is watched at first, so the
	// first attempts run at once and fail; the workman is idle when
	// their retries come due.
	p := start(t, bin, logPath, nil, args...)
	defer func() {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		_ = p.Wait(t, time.Minute)
	}()
	if !testbin.Poll(90*time.Second, 100*time.Millisecond, func() bool { return len(records(t, record)) >= n }) {
		t.Fatalf("%d of %d retried tasks done; log:\n%s", len(records(t, record)), n, tail(logPath, 4000))
	}
	var due, last time.Time
	var scheduled, done int
	for _, l := range readLog(t, logPath) {
		switch l.Msg {
		case "task failed; retry scheduled":
			ns, _ := l.Raw["retry_in"].(float64) // slog writes a duration in nanoseconds
			d := time.Duration(ns)
			if at := l.Time.Add(d); at.After(due) {
				due = at
			}
			scheduled++
		case "task done":
			if l.Time.After(last) {
				last = l.Time
			}
			done++
		}
	}
	late := last.Sub(due)
	t.Logf("RESULT delayed-retries: %d tasks failed once on the lowest of six queues; the last retry ran %v after the last delay ended (%d scheduled, %d done)",
		n, late.Round(time.Millisecond), scheduled, done)
	if scheduled != n || done != n || due.IsZero() {
		t.Fatalf("%d retries scheduled, %d tasks done; want %d each", scheduled, done, n)
	}
	if late > 5*time.Second {
		t.Errorf("the retries started up to %v after their delay ended, want within 5s", late)
	}
	if d, err := dead.Depth(ctx); err != nil || d.Total() != 0 {
		t.Errorf("dead-letter queue: %+v, %v", d, err)
	}
}
