package bitreport_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/notify/memnotify"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/bitreport"
)

// TestDeadLetteredCheckEndsTheWait: a space whose third check was
// dead-lettered is reported at once — not after a week of re-checks —
// with that item as an ERROR line that says so, and notified; the hook
// records nothing for a run or space the producer did not record, for a
// task of another type, nor over a row the run has.
func TestDeadLetteredCheckEndsTheWait(t *testing.T) {
	e := setup(t, "a", "b", "c")
	e.index_(t, "a", "b", "c")
	e.record(t, "a", bitlog.ResultSuccess, 1)
	e.record(t, "b", bitlog.ResultSuccess, 1)
	rep := e.report(t, 3, nil)
	var n memnotify.Notifier
	p := e.processor(t, func(c *bitreport.Config) { c.Notifier = &n })
	// Before: the report waits (re-queued, nothing written).
	if err := p.Handle(t.Context(), rep); err != nil || e.requeue.Len() != 1 {
		t.Fatalf("an incomplete space: %v, %d re-queued", err, e.requeue.Len())
	}
	hook := bitreport.DeadLettered(e.log)
	bitTask := func(runID, space, id string) *task.Task {
		tk := task.Bit{Account: "acme", StoreID: "1", SpaceID: space, ContentID: id, RunID: runID}.Task()
		tk.Attempts = 2
		return tk
	}
	cause := errors.New("bit: open store: disk on fire")
	for _, tk := range []*task.Task{
		bitTask("20990101T000000Z", "photos", "c"), // a run the producer did not record
		bitTask(run, "videos", "c"),                // a space it did not record in the run
		bitTask(run, "photos", "a"),                // an item that has its row
		task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "photos", ContentID: "c"}.Task(),
	} {
		if err := hook(t.Context(), tk, "failed", cause); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := e.log.Count(t.Context(), run, "acme", "1", "photos"); c.Total != 2 || c.Success != 2 {
		t.Fatalf("the hook recorded for tasks it must ignore: %+v", c)
	}
	if err := hook(t.Context(), bitTask(run, "photos", "c"), "failed", cause); err != nil {
		t.Fatal(err)
	}
	if err := p.Handle(t.Context(), rep); err != nil {
		t.Fatal(err)
	}
	if e.requeue.Len() != 1 {
		t.Fatalf("re-queued again (%d): the report still waits", e.requeue.Len())
	}
	lines := e.reportLines(t)
	if len(lines) != 3 {
		t.Fatalf("report lines %q", lines)
	}
	c := strings.Join(lines[2], "\t")
	if !strings.Contains(c, "ERROR") || !strings.Contains(c, "dead-lettered (failed, at attempt 3): bit: open store: disk on fire") {
		t.Errorf("the dead-lettered item's line: %q", c)
	}
	evs := n.Events()
	if len(evs) != 1 || !strings.Contains(evs[0].Body, "dead-lettered") {
		t.Fatalf("notifications %+v, want one naming the dead-lettered check", evs)
	}
}
