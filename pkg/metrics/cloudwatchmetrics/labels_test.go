package cloudwatchmetrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/metrics"
	"github.com/millfleet/mill/pkg/metrics/cloudwatchmetrics"
	"github.com/millfleet/mill/pkg/task"
)

// unknownTypes reports n tasks of n different unknown types to r, as a
// queue flooded with made-up task types makes Workman do, plus one of each
// registered type.
func unknownTypes(r metrics.Recorder, n int, registered []task.Type) {
	for i := range n {
		typ := task.Type(fmt.Sprintf("FORGED_%04d", i))
		r.DeadLettered(typ, "unknown_type")
		r.TaskDone(typ, "permanent", time.Millisecond)
	}
	for _, typ := range registered {
		r.TaskDone(typ, "success", time.Millisecond)
	}
}

// TestCloudWatchLabelsBounded: the same flood publishes one "other"
// dimension value, in one call.
func TestCloudWatchLabelsBounded(t *testing.T) {
	cc := &counting{}
	cw, err := cloudwatchmetrics.New(cc, cloudwatchmetrics.Config{TaskTypes: []task.Type{task.TypeBit}})
	if err != nil {
		t.Fatal(err)
	}
	unknownTypes(cw, 2000, []task.Type{task.TypeBit})
	if err := cw.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Tasks and TaskDuration for BIT/success and other/permanent, and
	// DeadLettered for other/unknown_type.
	if got := cc.datums.Load(); got != 5 || cc.calls.Load() != 1 {
		t.Errorf("%d datums in %d calls, want 5 in 1", got, cc.calls.Load())
	}
}
