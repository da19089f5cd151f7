package prometheusmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/millfleet/mill/pkg/metrics"
)

// timing holds the queue-wait histograms (metrics.TaskTiming), by queue
// and task type:
//
//	mill_queue_wait_seconds{queue,task_type}   histogram (send to start)
//	mill_task_run_seconds{queue,task_type}     histogram (handler run time)
//	mill_task_attempts{queue,task_type}        histogram (attempt number)
//
// p50 and p99 are histogram_quantile(0.5|0.99, sum by (le, queue,
// task_type) (rate(…_bucket[5m]))).
type timing struct {
	wait, run, attempts *prometheus.HistogramVec
}

func newTiming() timing {
	labels := []string{"queue", "task_type"}
	return timing{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mill_queue_wait_seconds", Help: "Time from a task's send (SQS SentTimestamp) to its start, by queue and task type.",
			Buckets: prometheus.ExponentialBuckets(0.05, 4, 12), // 50ms … ~58h
		}, labels),
		run: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mill_task_run_seconds", Help: "Time a task ran, by queue and task type.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 10), // 5ms … ~22min
		}, labels),
		attempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mill_task_attempts", Help: "Attempt number of each task run (1 = first), by queue and task type.",
			Buckets: prometheus.LinearBuckets(1, 1, 10),
		}, labels),
	}
}

func (t timing) collectors() []prometheus.Collector {
	return []prometheus.Collector{t.wait, t.run, t.attempts}
}

var _ metrics.TaskTimer = (*Recorder)(nil)

// TaskTimed implements metrics.TaskTimer.
func (p *Recorder) TaskTimed(tt metrics.TaskTiming) {
	typ := p.labels.Label(tt.Type)
	p.timing.wait.WithLabelValues(tt.Queue, typ).Observe(tt.Wait.Seconds())
	p.timing.run.WithLabelValues(tt.Queue, typ).Observe(tt.Run.Seconds())
	p.timing.attempts.WithLabelValues(tt.Queue, typ).Observe(float64(tt.Attempts))
}
