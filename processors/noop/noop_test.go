package noop_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/noop"
)

func TestNoopSleepsAndRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids")
	fr, err := noop.OpenFileRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	p := noop.New(noop.Config{Sleep: 10 * time.Millisecond, Recorder: fr})
	start := time.Now()
	for _, id := range []string{"a", "b", "a"} {
		if err := p.Handle(context.Background(), task.New(task.TypeNoop, map[string]string{"id": id})); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Errorf("three 10ms tasks took %v", el)
	}
	ids, err := noop.ReadRecord(path)
	if err != nil || len(ids) != 3 || ids[0] != "a" || ids[1] != "b" {
		t.Fatalf("ids %v, %v", ids, err)
	}
}

func TestNoopHonoursCtxAndSleepProperty(t *testing.T) {
	rec := &noop.MemoryRecorder{}
	p := noop.New(noop.Config{Recorder: rec})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := p.Handle(ctx, task.New(task.TypeNoop, map[string]string{"id": "x", "sleep": "1h"}))
	if err == nil || len(rec.IDs()) != 0 {
		t.Fatalf("err %v, recorded %v", err, rec.IDs())
	}
	err = p.Handle(context.Background(), task.New(task.TypeNoop, map[string]string{"sleep": "soon"}))
	if !processors.IsPermanent(err) {
		t.Fatalf("bad sleep: err %v, want permanent", err)
	}
}

// TestNoopFailProperty: a task with fail=n fails (retryably) while its
// attempts are below n and then succeeds; a fail that is not a number is
// permanent.
func TestNoopFailProperty(t *testing.T) {
	var rec noop.MemoryRecorder
	p := noop.New(noop.Config{Recorder: &rec})
	tk := task.New(task.TypeNoop, map[string]string{"id": "x", "fail": "2"})
	for attempt, wantErr := range []bool{true, true, false} {
		tk.Attempts = attempt
		err := p.Handle(context.Background(), tk)
		if (err != nil) != wantErr || processors.IsPermanent(err) {
			t.Fatalf("attempt %d: %v, want failure %v (not permanent)", attempt, err, wantErr)
		}
	}
	if ids := rec.IDs(); len(ids) != 1 {
		t.Fatalf("recorded %v, want the one success", ids)
	}
	if err := p.Handle(context.Background(), task.New(task.TypeNoop, map[string]string{"fail": "many"})); !processors.IsPermanent(err) {
		t.Fatalf("fail=many: %v, want a permanent error", err)
	}
}
