package prometheusmetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/millfleet/mill/pkg/metrics"
)

// limits are the per-store request limit metrics (metrics.LimitRecorder):
//
//	mill_store_request_limit{store}                  gauge (requests/s; 0 unlimited)
//	mill_store_request_limit_changes_total{store,change} counter
type limits struct {
	once    sync.Once
	limit   *prometheus.GaugeVec
	changes *prometheus.CounterVec
}

var _ metrics.LimitRecorder = (*Recorder)(nil)

// LimitChanged implements metrics.LimitRecorder. The metrics are
// registered at the first change, so a worker never throttled exports
// none.
func (p *Recorder) LimitChanged(store, change string, limit float64) {
	l := &p.limits
	l.once.Do(func() {
		l.limit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mill_store_request_limit", Help: "The request rate a store's throttling has limited this worker to (requests/s; 0: unlimited), by store.",
		}, []string{"store"})
		l.changes = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mill_store_request_limit_changes_total", Help: "Changes of a store's request limit, by store and change (decrease, increase, reset).",
		}, []string{"store", "change"})
		p.reg.MustRegister(l.limit, l.changes)
	})
	l.limit.WithLabelValues(store).Set(limit)
	l.changes.WithLabelValues(store, change).Inc()
}
