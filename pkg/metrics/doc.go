// Package metrics is Mill's observability: Prometheus collectors and the
// /healthz, /readyz and /metrics HTTP endpoints, and a CloudWatch publisher
// that aggregates task results in memory and sends them once per interval in
// a single PutMetricData call (never once per task).
//
// Both Prometheus and CloudWatch implement Recorder, which is what Workman
// (workman.Observer) and the processors.Metrics middleware
// (processors.Observer) report to; Multi fans out to several.
package metrics
