package fleetmember_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// TestMemberOutages: the worker's open circuits go into its record, which
// says degraded while there are any and running again after; a task handed
// back for an outage is not counted as failed.
func TestMemberOutages(t *testing.T) {
	h := newMember(t, "mill-bit", "mill-audit")
	ctx := context.Background()
	var mu sync.Mutex
	var open []fleet.Outage
	h.m.SetOutages(func() []fleet.Outage { mu.Lock(); defer mu.Unlock(); return open })
	h.m.TaskDone(task.TypeBit, processors.ResultUnavailable, time.Second)
	mu.Lock()
	open = []fleet.Outage{{Dependency: "postgres", Since: h.clk.Now().Add(-time.Minute), Cause: "connection refused", Types: []string{"BIT"}}}
	mu.Unlock()
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	w := h.record(t)
	if w.State != fleet.StateDegraded || !reflect.DeepEqual(w.Outages, open) || w.Counts["BIT"] != (fleet.Counts{}) {
		t.Fatalf("during the outage: state %s, outages %+v, counts %+v", w.State, w.Outages, w.Counts)
	}
	mu.Lock()
	open = nil
	mu.Unlock()
	h.clk.Advance(10 * time.Second)
	if err := h.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if w := h.record(t); w.State != fleet.StateRunning || w.Outages != nil {
		t.Fatalf("after the outage: state %s, outages %+v", w.State, w.Outages)
	}
}
