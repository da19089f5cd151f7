package prometheusmetrics_test

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/millfleet/mill/pkg/metrics"
	"github.com/millfleet/mill/pkg/metrics/prometheusmetrics"
	"github.com/millfleet/mill/pkg/task"
)

// histogram returns the histogram of family name with the given queue and
// task_type labels.
func histogram(t *testing.T, p *prometheusmetrics.Recorder, name, queue, typ string) *dto.Histogram {
	t.Helper()
	fams, err := p.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["queue"] == queue && l["task_type"] == typ {
				return m.GetHistogram()
			}
		}
	}
	t.Fatalf("no %s{queue=%q,task_type=%q}", name, queue, typ)
	return nil
}

// cumulative is the histogram's count at or below le.
func cumulative(t *testing.T, h *dto.Histogram, le float64) uint64 {
	t.Helper()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	t.Fatalf("no bucket le=%v", le)
	return 0
}

// TestTaskTimedHistograms: queue wait, run time and attempts land in
// histograms by queue and task type (through Multi), from which p50 and
// p99 are read: 99 tasks waited 1 s, one waited an hour.
func TestTaskTimedHistograms(t *testing.T) {
	p := prometheusmetrics.New(prometheusmetrics.Options{NoProcessMetrics: true})
	r := metrics.Multi(p, metrics.Nop{}).(metrics.TaskTimer)
	for i := range 100 {
		tt := metrics.TaskTiming{Queue: "mill-bit", Type: task.TypeBit, Wait: time.Second, Run: 100 * time.Millisecond, Attempts: 1}
		if i == 99 {
			tt.Wait, tt.Run, tt.Attempts = time.Hour, 10*time.Second, 3
		}
		r.TaskTimed(tt)
	}
	r.TaskTimed(metrics.TaskTiming{Queue: "mill-dup", Type: "HOSTILE-TYPE", Wait: 2 * time.Second, Attempts: 1})

	w := histogram(t, p, "mill_queue_wait_seconds", "mill-bit", "BIT")
	if w.GetSampleCount() != 100 || w.GetSampleSum() != 99+3600 {
		t.Errorf("wait: %d samples, sum %v", w.GetSampleCount(), w.GetSampleSum())
	}
	// p50 and p99 in the bucket 0.8..3.2 s (99 of 100), the last above 3276.8 s.
	if c := cumulative(t, w, 0.8); c != 0 {
		t.Errorf("wait ≤0.8s: %d", c)
	}
	if c := cumulative(t, w, 3.2); c != 99 {
		t.Errorf("wait ≤3.2s: %d, want 99", c)
	}
	if c := cumulative(t, w, 3276.8); c != 99 { // the hour is above 3276.8 s
		t.Errorf("wait ≤3276.8s: %d, want 99", c)
	}
	run := histogram(t, p, "mill_task_run_seconds", "mill-bit", "BIT")
	if run.GetSampleCount() != 100 || cumulative(t, run, 0.32) != 99 {
		t.Errorf("run: %d samples, %d ≤0.32s", run.GetSampleCount(), cumulative(t, run, 0.32))
	}
	att := histogram(t, p, "mill_task_attempts", "mill-bit", "BIT")
	if cumulative(t, att, 1) != 99 || cumulative(t, att, 2) != 99 || cumulative(t, att, 3) != 100 {
		t.Errorf("attempts buckets %v", att.GetBucket())
	}
	// An unregistered type is labelled "other", never itself.
	if h := histogram(t, p, "mill_queue_wait_seconds", "mill-dup", metrics.OtherTaskType); h.GetSampleCount() != 1 {
		t.Errorf("other: %d samples", h.GetSampleCount())
	}
}
