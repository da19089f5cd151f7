package prometheusmetrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/millfleet/mill/pkg/task"

	"github.com/millfleet/mill/pkg/metrics"
)

// Options configure New. The zero value is ready to use.
type Options struct {
	// Requests, when set, is read at every scrape for the number of SQS
	// requests made so far by operation (sqsqueue's meter Snapshot, or a
	// memqueue's Requests); it is exported as mill_sqs_requests_total.
	Requests func() map[string]int64
	// NoProcessMetrics leaves out the Go runtime and process collectors.
	NoProcessMetrics bool
	// TaskTypes are the task types labelled as themselves (the registered
	// ones); any other type is labelled OtherTaskType. Default task.Types.
	TaskTypes []task.Type
}

// Recorder is a metrics.Recorder exporting Prometheus metrics (task_type is a
// registered type or "other", see TaskTypeLabels):
//
//	mill_tasks_total{task_type,result}              counter
//	mill_task_duration_seconds{task_type}           histogram
//	mill_tasks_in_flight                            gauge (held + running)
//	mill_receives_total{queue}                      counter (receive calls)
//	mill_empty_receives_total{queue}                counter
//	mill_messages_received_total{queue}             counter
//	mill_dead_lettered_total{task_type,reason}      counter
//	mill_sqs_requests_total{operation}              counter (from Requests)
//	mill_store_request_limit{store}                 gauge (limits.go)
//	mill_store_request_limit_changes_total{store,change} counter
//
// and the queue-wait histograms of timing.go (TaskTimed).
type Recorder struct {
	reg      *prometheus.Registry
	tasks    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	receives *prometheus.CounterVec
	empty    *prometheus.CounterVec
	messages *prometheus.CounterVec
	dead     *prometheus.CounterVec
	labels   metrics.TaskTypeLabels
	timing   timing
	limits   limits // limits.go
}

var _ metrics.Recorder = (*Recorder)(nil)

// New returns a Prometheus recorder with its own registry.
func New(o Options) *Recorder {
	p := &Recorder{
		reg:    prometheus.NewRegistry(),
		labels: metrics.NewTaskTypeLabels(o.TaskTypes),
		timing: newTiming(),
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mill_tasks_total", Help: "Tasks handled, by task type and result.",
		}, []string{"task_type", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mill_task_duration_seconds", Help: "Time the processor took per task.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 10), // 5ms … ~22min
		}, []string{"task_type"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mill_tasks_in_flight", Help: "Messages received and not yet finished (running or held).",
		}),
		receives: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mill_receives_total", Help: "Receive calls, by queue.",
		}, []string{"queue"}),
		empty: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mill_empty_receives_total", Help: "Receive calls that returned no message, by queue.",
		}, []string{"queue"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mill_messages_received_total", Help: "Messages received, by queue.",
		}, []string{"queue"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mill_dead_lettered_total", Help: "Tasks sent to the dead-letter queue, by task type and reason.",
		}, []string{"task_type", "reason"}),
	}
	p.reg.MustRegister(p.tasks, p.duration, p.inFlight, p.receives, p.empty, p.messages, p.dead)
	p.reg.MustRegister(p.timing.collectors()...)
	if o.Requests != nil {
		p.reg.MustRegister(requestCollector{fn: o.Requests})
	}
	if !o.NoProcessMetrics {
		p.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return p
}

// Registry returns the registry the metrics are in (add your own there).
func (p *Recorder) Registry() *prometheus.Registry { return p.reg }

// TaskDone implements metrics.Recorder.
func (p *Recorder) TaskDone(t task.Type, result string, elapsed time.Duration) {
	typ := p.labels.Label(t)
	p.tasks.WithLabelValues(typ, result).Inc()
	p.duration.WithLabelValues(typ).Observe(elapsed.Seconds())
}

// DeadLettered implements metrics.Recorder.
func (p *Recorder) DeadLettered(t task.Type, reason string) {
	p.dead.WithLabelValues(p.labels.Label(t), reason).Inc()
}

// Received implements metrics.Recorder.
func (p *Recorder) Received(queue string, n int) {
	p.receives.WithLabelValues(queue).Inc()
	if n == 0 {
		p.empty.WithLabelValues(queue).Inc()
	}
	p.messages.WithLabelValues(queue).Add(float64(n))
}

// InFlight implements metrics.Recorder.
func (p *Recorder) InFlight(delta int) { p.inFlight.Add(float64(delta)) }

var requestsDesc = prometheus.NewDesc("mill_sqs_requests_total", "SQS requests made, by operation.", []string{"operation"}, nil)

type requestCollector struct{ fn func() map[string]int64 }

func (c requestCollector) Describe(ch chan<- *prometheus.Desc) { ch <- requestsDesc }

func (c requestCollector) Collect(ch chan<- prometheus.Metric) {
	for op, n := range c.fn() {
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), op)
	}
}

// Handler serves the operational endpoints:
//
//	/healthz  200 "ok" while the process serves HTTP (liveness)
//	/readyz   200 "ready" when ready() is true, else 503 "not ready"
//	/metrics  the Prometheus exposition of g
//
// ready may be nil (always ready).
func Handler(g prometheus.Gatherer, ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil && !ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	return mux
}
