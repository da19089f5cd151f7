// Package prometheusmetrics is the metrics.Recorder exporting Prometheus
// metrics, and Handler, the /healthz, /readyz and /metrics HTTP endpoints.
package prometheusmetrics
