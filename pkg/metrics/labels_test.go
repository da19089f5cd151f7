package metrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/metrics/prometheusmetrics"

	"github.com/millfleet/mill/pkg/metrics"
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

// TestPrometheusLabelsBounded: 2,000 unknown task types make one "other"
// series per metric, not 2,000; registered types keep their own label.
func TestPrometheusLabelsBounded(t *testing.T) {
	registered := []task.Type{task.TypeDup, task.TypeNoop}
	p := prometheusmetrics.New(prometheusmetrics.Options{NoProcessMetrics: true, TaskTypes: registered})
	unknownTypes(p, 2000, registered)
	mfs, err := p.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "task_type" {
					if series[mf.GetName()] == nil {
						series[mf.GetName()] = map[string]bool{}
					}
					series[mf.GetName()][l.GetValue()] = true
				}
			}
		}
	}
	want := map[string]int{"mill_tasks_total": 3, "mill_task_duration_seconds": 3, "mill_dead_lettered_total": 1}
	for name, n := range want {
		if got := len(series[name]); got != n {
			t.Errorf("%s: %d task_type values, want %d (%v)", name, got, n, keys(series[name]))
		}
		if !series[name][metrics.OtherTaskType] {
			t.Errorf("%s: no %q series", name, metrics.OtherTaskType)
		}
	}
	for _, typ := range registered {
		if !series["mill_tasks_total"][string(typ)] {
			t.Errorf("registered type %s has no series of its own", typ)
		}
	}
}

// Unregistered known types are "other" too; no configured types means
// every known type.
func TestTaskTypeLabel(t *testing.T) {
	l := metrics.NewTaskTypeLabels([]task.Type{task.TypeNoop})
	for typ, want := range map[task.Type]string{task.TypeNoop: "NOOP", task.TypeDup: "other", "": "other", "x": "other"} {
		if got := l.Label(typ); got != want {
			t.Errorf("Label(%q) = %q, want %q", typ, got, want)
		}
	}
	all := metrics.NewTaskTypeLabels(nil)
	for _, typ := range task.Types {
		if got := all.Label(typ); got != string(typ) {
			t.Errorf("default Label(%q) = %q", typ, got)
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
